/**
 * The leader's time-limit sweep (docs/decisions/0037-run-time-limit.md, "The leader's sweep"): a
 * partial index of the running jobs that have a time limit of their own, by start, so the sweep
 * reads only those (a few, at most every running job), never the finished history.
 */
export default {
  version: 43,
  name: 'time-limit-sweep',
  sql: `
CREATE INDEX jobs_running_limited ON jobs (started_at) WHERE status = 'running' AND time_limit_ms IS NOT NULL;
`,
};
