/**
 * The session report's escalations and force-releases, as SQLite's 0049
 * (docs/decisions/0060-session-report-outcomes.md): `escalations` counts the session's claims that
 * ended `escalated` (the ledger-type match it replaces found none), and `issues_worked` tells a
 * claim an operator force-released `force_released` by its `claim:force_released` ledger row.
 */
export default {
  version: 49,
  name: 'session-report-outcomes',
  sql: `
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
  (SELECT coalesce(jsonb_agg(jsonb_build_object('key', t.key, 'epoch', c.epoch,
       'outcome', CASE WHEN c.outcome = 'released' AND EXISTS (
             SELECT 1 FROM audit_events f
             WHERE f.session_id = c.session_id AND f.type = 'claim:force_released'
               AND f.task_key = t.key AND f.epoch = c.epoch) THEN 'force_released' ELSE c.outcome END,
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
  (SELECT count(*) FROM claims c
   WHERE c.session_id = s.id AND c.outcome = 'escalated') AS escalations
FROM sessions s;
`,
};
