/**
 * Job retention (docs/decisions/0039-job-retention.md), as SQLite's 0035: `jobs_finished` walks
 * the finished jobs oldest finish first, so a prune batch reads only what it may remove (and the
 * newest job of each task, which it keeps); `job_retention` counts what has been removed, by
 * state (/metrics adds them back, so finished jobs stay counters) and for a reader asking for a
 * job that is no longer there.
 */
export default {
  version: 35,
  name: 'job-retention',
  sql: `
CREATE INDEX jobs_finished ON jobs (finished_at, id)
  WHERE status IN ('done', 'failed', 'oom_killed', 'cancelled', 'escalated');
CREATE TABLE job_retention (
  status text COLLATE "C" PRIMARY KEY,
  removed bigint NOT NULL CHECK (removed > 0),
  max_id bigint NOT NULL,
  last_cutoff timestamptz NOT NULL,
  last_at timestamptz NOT NULL
);
`,
};
