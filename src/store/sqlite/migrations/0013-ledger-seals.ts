/**
 * The tamper-evident ledger (docs/decisions/0011-tamper-evident-ledger.md) and the session report:
 * - `ledger_keys`: the Ed25519 public keys checkpoints are signed with (`baton ledger init`).
 * - `audit_checkpoints`: signed seals over settled ranges of `audit_events`, and prune records.
 * - `ledger_prune_gate`: opened only inside `baton audit prune`'s transaction, the one writer that
 *   may delete ledger rows and checkpoints; every other update or delete is still refused.
 * - `session_report`: one row per session, for people who use SQL
 *   (docs/architecture.md#session-report).
 */
export default {
  version: 13,
  name: 'ledger-seals',
  sql: `
CREATE TABLE ledger_keys (
  id TEXT PRIMARY KEY,
  public_key TEXT NOT NULL,
  added_at INTEGER NOT NULL
);
CREATE TABLE audit_checkpoints (
  seq INTEGER PRIMARY KEY CHECK (seq >= 1),
  kind TEXT NOT NULL CHECK (kind IN ('seal', 'prune')),
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL,
  row_count INTEGER NOT NULL CHECK (row_count >= 0),
  leaves BLOB,
  root TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  key_id TEXT NOT NULL,
  signature TEXT NOT NULL,
  sealed_at INTEGER NOT NULL,
  through_seq INTEGER,
  CHECK ((kind = 'seal') = (leaves IS NOT NULL)),
  CHECK ((kind = 'prune') = (through_seq IS NOT NULL))
);
CREATE TABLE ledger_prune_gate (open INTEGER NOT NULL);
INSERT INTO ledger_prune_gate (open) VALUES (0);

DROP TRIGGER audit_events_no_delete;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
WHEN (SELECT open FROM ledger_prune_gate) IS NOT 1
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit_checkpoints is append-only'); END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
WHEN (SELECT open FROM ledger_prune_gate) IS NOT 1
BEGIN SELECT RAISE(ABORT, 'audit_checkpoints is append-only'); END;
CREATE TRIGGER ledger_keys_no_update BEFORE UPDATE ON ledger_keys
BEGIN SELECT RAISE(ABORT, 'ledger_keys is append-only'); END;
CREATE TRIGGER ledger_keys_no_delete BEFORE DELETE ON ledger_keys
BEGIN SELECT RAISE(ABORT, 'ledger_keys is append-only'); END;

-- end_state: 'fenced' is a session declared stale while its process was alive (it rejoined
-- under a new session with the same host and pid); 'rescued' one whose process never came back.
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
  (SELECT json_group_array(json_object('key', w.key, 'epoch', w.epoch, 'outcome', w.outcome,
       'claimedAt', w.claimed_at, 'releasedAt', w.released_at))
   FROM (SELECT t.key, c.epoch, c.outcome, c.claimed_at, c.released_at
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
