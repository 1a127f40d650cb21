/**
 * Who or what ended a session, recorded rather than inferred (docs/architecture.md#session-report):
 * - `sessions.end_reason` may also be `rescued` (recovery declared it stale after its heartbeats
 *   stopped, written by the rescue's own statement) and `operator` (`baton session end` by someone
 *   other than the session itself); rows from before keep what they had (a rescued one null,
 *   still told `rescued` or `fenced` from its state, as before).
 * - `sessions.ended_by`: who ended it, in words (`alice@box`, `token t1 (ci)`), for `operator`.
 * - `session_report` reads `end_reason` for stale sessions too, and gains `ended_by`.
 * SQLite cannot change a CHECK in place: the table is rebuilt (foreign keys are off while a
 * migration runs and checked before it commits: sqlite-store.ts) with its indexes, and the view
 * that reads it is made again.
 */
export default {
  version: 28,
  name: 'session-ended-by',
  sql: `
DROP VIEW session_report;

CREATE TABLE sessions_new (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('agent', 'human', 'daemon')),
  host TEXT NOT NULL CHECK (length(host) BETWEEN 1 AND 100),
  pid INTEGER NOT NULL CHECK (pid >= 0),
  name TEXT CHECK (name IS NULL OR length(name) <= 100),
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  ended_at INTEGER,
  state TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'ended', 'stale')),
  ttl_ms INTEGER CHECK (ttl_ms IS NULL OR ttl_ms >= 1),
  wait_until INTEGER,
  wait_host TEXT CHECK (wait_host IS NULL OR length(wait_host) BETWEEN 1 AND 100),
  wait_start INTEGER NOT NULL DEFAULT 0 CHECK (wait_start IN (0, 1)),
  handed_job INTEGER,
  end_reason TEXT
    CHECK (end_reason IS NULL OR end_reason IN ('stopped', 'died', 'rescued', 'operator')),
  ended_by TEXT CHECK (ended_by IS NULL OR length(ended_by) <= 200),
  CHECK ((state = 'live') = (ended_at IS NULL))
);
INSERT INTO sessions_new (id, kind, host, pid, name, started_at, heartbeat_at, ended_at, state, ttl_ms,
    wait_until, wait_host, wait_start, handed_job, end_reason)
  SELECT id, kind, host, pid, name, started_at, heartbeat_at, ended_at, state, ttl_ms,
    wait_until, wait_host, wait_start, handed_job, end_reason
  FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_live ON sessions (heartbeat_at) WHERE state = 'live';
CREATE INDEX sessions_waiting ON sessions (wait_until) WHERE wait_until IS NOT NULL;

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
