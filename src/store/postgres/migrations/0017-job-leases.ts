/**
 * Batch fetch and completion (docs/decisions/0017-batch-fetch-and-completion.md): a job taken in
 * a batch is held under a lease, `lease_until` on the database clock. Every write of its holder
 * under that epoch is refused once the lease has passed (the finish guard, store/job-guard.ts),
 * and the next batch taken by anyone gives the job back to the queue (or fails it once its
 * attempts are spent). NULL: no lease (a job taken one at a time, or placed by a dispatcher, is
 * held by its session's liveness alone). A queued job never carries one: every path back to the
 * queue clears it. jobs_leased finds the expired ones without reading the queue or the history.
 */
export default {
  version: 17,
  name: 'job-leases',
  sql: `
ALTER TABLE jobs ADD COLUMN lease_until timestamptz;
CREATE INDEX jobs_leased ON jobs (lease_until)
  WHERE lease_until IS NOT NULL AND status IN ('claimed', 'running');
`,
};
