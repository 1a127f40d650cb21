/**
 * Batch fetch and completion, as PostgreSQL's 0017 (docs/decisions/0017-batch-fetch-and-completion.md):
 * `lease_until` (milliseconds on the database clock) bounds how long a job taken in a batch is
 * held; NULL for a job held by its session's liveness alone.
 */
export default {
  version: 17,
  name: 'job-leases',
  sql: `
ALTER TABLE jobs ADD COLUMN lease_until INTEGER;
CREATE INDEX jobs_leased ON jobs (lease_until)
  WHERE lease_until IS NOT NULL AND status IN ('claimed', 'running');
`,
};
