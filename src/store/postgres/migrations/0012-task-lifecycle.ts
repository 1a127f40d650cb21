/**
 * The task lifecycle (core/task.ts), human sessions and settings; the same columns, constraints
 * and backfill as SQLite's 0012:
 * - tasks get their state with when, by whom and why, a gate, the review flag, a body, a URL and
 *   the last rejection's reason; sessions their own TTL (null: held to the rescuer's
 *   --stale-after); jobs may end `escalated`, claims `escalated` or `expired`;
 * - settings: named values the store keeps (the vague-issue rule's `vague-words`);
 * - baton_take_queued (0008) takes the time to compare run_after with from its caller, so the
 *   statement's one clock reading serves both, and passes over jobs whose task is not open or
 *   waits behind a gate: a gated task's job is never handed out.
 *
 * The backfill puts every task in the state its jobs and claims imply
 * (docs/decisions/0010-task-lifecycle.md): done when its latest ending (a job that ended done,
 * failed or oom_killed, a claim released done or failed) was done and nothing is active on it
 * (no live claim, no active job); open otherwise. Each task put in done gets a `task:state` row.
 */
export default {
  version: 12,
  name: 'task-lifecycle',
  sql: `
ALTER TABLE sessions ADD COLUMN ttl_ms bigint CHECK (ttl_ms IS NULL OR ttl_ms >= 1);

ALTER TABLE tasks
  ADD COLUMN state text NOT NULL DEFAULT 'open'
    CHECK (state IN ('open', 'in_review', 'done', 'closed', 'escalated')),
  ADD COLUMN state_at timestamptz,
  ADD COLUMN state_by text CHECK (state_by IS NULL OR length(state_by) <= 200),
  ADD COLUMN state_reason text CHECK (state_reason IS NULL OR length(state_reason) <= 2000),
  ADD COLUMN gate text CHECK (gate IS NULL OR gate IN ('design')),
  ADD COLUMN review_required boolean NOT NULL DEFAULT false,
  ADD COLUMN body text NOT NULL DEFAULT '' CHECK (length(body) <= 65536),
  ADD COLUMN url text CHECK (url IS NULL OR length(url) <= 2000),
  ADD COLUMN feedback text CHECK (feedback IS NULL OR length(feedback) <= 2000);

CREATE TABLE settings (
  name text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  value text NOT NULL CHECK (length(value) <= 1000),
  updated_at timestamptz NOT NULL,
  updated_by text CHECK (updated_by IS NULL OR length(updated_by) <= 200)
);

ALTER TABLE jobs DROP CONSTRAINT jobs_status_check, ADD CONSTRAINT jobs_status_check CHECK (status IN
  ('queued', 'claimed', 'running', 'done', 'failed', 'oom_killed', 'cancelled', 'escalated'));
ALTER TABLE claims DROP CONSTRAINT claims_outcome_check, ADD CONSTRAINT claims_outcome_check CHECK (outcome IN
  ('done', 'failed', 'released', 'abandoned', 'recovered', 'escalated', 'expired'));

WITH endings AS (
  SELECT task_id, finished_at AS at, status AS outcome, 'job ' || id AS by, 0 AS src, id
  FROM jobs WHERE status IN ('done', 'failed', 'oom_killed') AND finished_at IS NOT NULL
  UNION ALL
  SELECT task_id, released_at, outcome, 'session ' || session_id, 1, id
  FROM claims WHERE outcome IN ('done', 'failed')
), latest AS (
  SELECT task_id, at, outcome, by,
    row_number() OVER (PARTITION BY task_id ORDER BY at DESC, src DESC, id DESC) AS n
  FROM endings
)
UPDATE tasks SET state = 'done', state_at = latest.at, state_by = latest.by
FROM latest
WHERE latest.task_id = tasks.id AND latest.n = 1 AND latest.outcome = 'done'
  AND tasks.holder_session_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ('queued', 'claimed', 'running'));
UPDATE tasks SET state_at = created_at WHERE state = 'open';
-- A task inserted by other means than Baton's (a bulk seed) reaches open when it is inserted.
ALTER TABLE tasks ALTER COLUMN state_at SET NOT NULL,
  ALTER COLUMN state_at SET DEFAULT date_trunc('milliseconds', clock_timestamp());
INSERT INTO audit_events (at, type, task_key, detail)
SELECT state_at, 'task:state', key,
  jsonb_build_object('from', 'open', 'to', 'done', 'action', 'backfill', 'by', state_by)
FROM tasks WHERE state = 'done' ORDER BY state_at, id;

DROP FUNCTION baton_take_queued(integer);
CREATE FUNCTION baton_take_queued(n integer, due timestamptz) RETURNS SETOF bigint LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
    SELECT jobs.id FROM jobs
    WHERE jobs.status = 'queued' AND jobs.run_after <= due
      AND NOT EXISTS (
        SELECT 1 FROM tasks t WHERE t.id = jobs.task_id AND (t.state <> 'open' OR t.gate IS NOT NULL))
    ORDER BY jobs.priority, jobs.queued_at, jobs.id
    LIMIT n
    FOR UPDATE OF jobs SKIP LOCKED;
END $$;
`,
};
