/**
 * The session report's escalations and force-releases (docs/decisions/0060-session-report-outcomes.md):
 * - `escalations` counted ledger rows whose type held "escalat", and no type does (an escalation is
 *   `claim:released` with outcome escalated, and `task:state` with action escalate): always 0. It now
 *   counts the session's claims that ended `escalated`, handed to a human while the session held them.
 * - a claim an operator force-released ends `released` on its row, as a holder's own release does;
 *   `issues_worked` now tells it `force_released` by its `claim:force_released` ledger row (the
 *   session, task and fenced epoch; through audit_by_session).
 * The view is made again with these two changes; everything else reads as 0028 made it.
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
  CASE WHEN s.kind = 'agent' THEN (SELECT CAST(json_extract(a.detail, '$.pid') AS INTEGER) FROM audit_events a
   WHERE a.session_id = s.id AND a.type = 'job:spawned' ORDER BY a.id LIMIT 1) END AS agent_pid,
  (SELECT json_group_array(json_object('key', w.key, 'epoch', w.epoch, 'outcome', w.outcome,
       'claimedAt', w.claimed_at, 'releasedAt', w.released_at, 'run', json(w.run)))
   FROM (SELECT t.key, c.epoch,
           CASE WHEN c.outcome = 'released' AND EXISTS (
             SELECT 1 FROM audit_events f
             WHERE f.session_id = c.session_id AND f.type = 'claim:force_released'
               AND f.task_key = t.key AND f.epoch = c.epoch) THEN 'force_released' ELSE c.outcome END AS outcome,
           c.claimed_at, c.released_at,
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
  (SELECT count(*) FROM claims c
   WHERE c.session_id = s.id AND c.outcome = 'escalated') AS escalations
FROM sessions s;
`,
};
