/**
 * The queue index covers `run_after` as well, so `claimNext` (status = 'queued' AND run_after <= ?
 * ORDER BY priority, queued_at, id) stays a walk of `jobs_queue` once statistics exist: without
 * the column, SQLite's planner picks `SCAN jobs` plus a sort after ANALYZE or PRAGMA optimize.
 */
export default {
  version: 5,
  name: 'queue-index',
  sql: `
DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs (priority, queued_at, id, run_after) WHERE status = 'queued';
`,
};
