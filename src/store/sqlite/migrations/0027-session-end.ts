/**
 * How a session ended and how its runs ended, as PostgreSQL's 0027 (docs/architecture.md#session-report):
 * - `sessions.end_reason`: `stopped` (ended by itself, its runner or `baton session end`) or
 *   `died` (its process was gone and a restarted `baton up` on its host took over); null on rows
 *   ended before this migration (reason unknown) and on live or stale sessions.
 * - `session_report` gains `end_reason`, `agent_pid` (the agent's own pid, from the session's
 *   `job:spawned` row; the session's pid is its `baton up`'s) and, per issue worked, `run`: how the
 *   job run under that claim ended, from the ledger as `baton job show` reads it (core/job-attempts.ts).
 */
export default {
  version: 27,
  name: 'session-end',
  sql: `
ALTER TABLE sessions ADD COLUMN end_reason TEXT
  CHECK (end_reason IS NULL OR end_reason IN ('stopped', 'died'));

DROP VIEW session_report;
CREATE VIEW session_report AS
SELECT
  s.id AS session,
  s.kind,
  s.host,
  s.pid,
  s.name,
  s.started_at,
  s.ended_at,
  CASE
    WHEN s.state = 'live' THEN 'live'
    WHEN s.state = 'ended' THEN 'ended'
    WHEN EXISTS (
      SELECT 1 FROM sessions n
      WHERE n.host = s.host AND n.pid = s.pid AND n.id > s.id AND n.started_at >= s.ended_at
    ) THEN 'fenced'
    ELSE 'rescued'
  END AS end_state,
  CASE WHEN s.state = 'ended' THEN s.end_reason END AS end_reason,
  (SELECT CAST(json_extract(a.detail, '$.pid') AS INTEGER) FROM audit_events a
   WHERE a.session_id = s.id AND a.type = 'job:spawned' ORDER BY a.id LIMIT 1) AS agent_pid,
  (SELECT json_group_array(json_object('key', w.key, 'epoch', w.epoch, 'outcome', w.outcome,
       'claimedAt', w.claimed_at, 'releasedAt', w.released_at, 'run', json(w.run)))
   FROM (SELECT t.key, c.epoch, c.outcome, c.claimed_at, c.released_at,
           (SELECT json_object('job', e.job_id,
                'outcome', CASE e.type WHEN 'job:requeued' THEN 'requeued' WHEN 'job:cancelled' THEN 'cancelled'
                  ELSE json_extract(e.detail, '$.status') END,
                'reason', json_extract(e.detail, '$.reason'))
            FROM audit_events sp JOIN audit_events e
              ON e.task_key = sp.task_key AND e.job_id = sp.job_id AND e.id > sp.id
            WHERE sp.session_id = c.session_id AND sp.type = 'job:spawned' AND sp.task_key = t.key
              AND e.type IN ('job:requeued', 'job:finished', 'job:cancelled')
            ORDER BY e.id LIMIT 1) AS run
         FROM claims c JOIN tasks t ON t.id = c.task_id
         WHERE c.session_id = s.id ORDER BY c.id) w) AS issues_worked,
  (SELECT count(DISTINCT a.job_id) FROM audit_events a
   WHERE a.session_id = s.id AND a.type IN ('job:claimed', 'job:placed')) AS jobs,
  (SELECT count(*) FROM audit_events a
   WHERE a.session_id = s.id AND a.type IN ('job:claimed', 'job:placed')) AS attempts,
  (SELECT coalesce(sum(coalesce(c.released_at, s.ended_at,
       CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)) - c.claimed_at), 0)
   FROM claims c WHERE c.session_id = s.id) AS held_ms,
  (SELECT count(*) FROM audit_events a
   WHERE a.session_id = s.id AND a.type LIKE '%escalat%') AS escalations
FROM sessions s;
`,
};
