/**
 * Who or what ended a session, recorded rather than inferred, as SQLite's 0028
 * (docs/architecture.md#session-report):
 * - `sessions.end_reason` may also be `rescued` (recovery declared it stale after its heartbeats
 *   stopped, written by the rescue's own statement) and `operator` (`baton session end` by someone
 *   other than the session itself); rows from before keep what they had (a rescued one null,
 *   still told `rescued` or `fenced` from its state, as before).
 * - `sessions.ended_by`: who ended it, in words (`alice@box`, `token t1 (ci)`), for `operator`.
 * - `session_report` reads `end_reason` for stale sessions too, and gains `ended_by`.
 */
export default {
  version: 28,
  name: 'session-ended-by',
  sql: `
ALTER TABLE sessions DROP CONSTRAINT sessions_end_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_end_reason_check
  CHECK (end_reason IS NULL OR end_reason IN ('stopped', 'died', 'rescued', 'operator'));
ALTER TABLE sessions ADD COLUMN ended_by text CHECK (ended_by IS NULL OR length(ended_by) <= 200);

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
  s.end_reason,
  s.ended_by,
  CASE WHEN s.kind = 'agent' THEN (SELECT (a.detail->>'pid')::int FROM audit_events a
   WHERE a.session_id = s.id AND a.type = 'job:spawned' ORDER BY a.id LIMIT 1) END AS agent_pid,
  (SELECT coalesce(jsonb_agg(jsonb_build_object('key', t.key, 'epoch', c.epoch, 'outcome', c.outcome,
       'claimedAt', (extract(epoch FROM c.claimed_at) * 1000)::bigint,
       'releasedAt', (extract(epoch FROM c.released_at) * 1000)::bigint,
       'run', (SELECT jsonb_build_object('job', e.job_id,
                 'outcome', CASE e.type WHEN 'job:requeued' THEN 'requeued' WHEN 'job:cancelled' THEN 'cancelled'
                   ELSE e.detail->>'status' END,
                 'reason', e.detail->'reason')
               FROM audit_events sp JOIN audit_events e
                 ON e.task_key = sp.task_key AND e.job_id = sp.job_id AND e.id > sp.id
               WHERE sp.session_id = c.session_id AND sp.type = 'job:spawned' AND sp.task_key = t.key
                 AND e.type IN ('job:requeued', 'job:finished', 'job:cancelled')
               ORDER BY e.id LIMIT 1)) ORDER BY c.id), '[]'::jsonb)
   FROM claims c JOIN tasks t ON t.id = c.task_id
   WHERE c.session_id = s.id) AS issues_worked,
  (SELECT count(DISTINCT a.job_id) FROM audit_events a
   WHERE a.session_id = s.id AND a.type IN ('job:claimed', 'job:placed')) AS jobs,
  (SELECT count(*) FROM audit_events a
   WHERE a.session_id = s.id AND a.type IN ('job:claimed', 'job:placed')) AS attempts,
  (SELECT coalesce(sum((extract(epoch FROM
       coalesce(c.released_at, s.ended_at, clock_timestamp()) - c.claimed_at) * 1000)::bigint), 0)::bigint
   FROM claims c WHERE c.session_id = s.id) AS held_ms,
  (SELECT count(*) FROM audit_events a
   WHERE a.session_id = s.id AND a.type LIKE '%escalat%') AS escalations
FROM sessions s;
`,
};
