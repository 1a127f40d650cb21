/**
 * The run time limit (docs/decisions/0037-run-time-limit.md): a job may carry its own limit, in
 * milliseconds, over a run's length from its start as the database recorded it (`started_at`).
 * Kept with the job, so any host that runs it, after a failover or a requeue too, applies the
 * same limit; null is none of its own (the runner's `baton up --time-limit`, if any, applies).
 */
export default {
  version: 34,
  name: 'run-time-limit',
  sql: `
ALTER TABLE jobs ADD COLUMN time_limit_ms integer CHECK (time_limit_ms IS NULL OR time_limit_ms > 0);
`,
};
