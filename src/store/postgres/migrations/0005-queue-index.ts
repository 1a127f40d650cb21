/**
 * The queue index covers `run_after` as well, like SQLite's 0005, so `claimNext` can filter on it
 * without visiting the heap for queued rows that are not due yet.
 */
export default {
  version: 5,
  name: 'queue-index',
  sql: `
DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs (priority, queued_at, id, run_after) WHERE status = 'queued';
`,
};
