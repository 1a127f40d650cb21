/**
 * The tamper-evident ledger (docs/decisions/0011-tamper-evident-ledger.md) and the session report,
 * as in the SQLite migration of the same number:
 * - `ledger_keys`, `audit_checkpoints`: public keys; signed seals and prune records.
 * - The append-only trigger lets a DELETE through only inside `baton audit prune`'s transaction,
 *   which sets `baton.ledger_prune` locally; the same trigger now guards checkpoints and keys.
 * - `session_report`: one row per session (docs/architecture.md#session-report).
 */
export default {
  version: 13,
  name: 'ledger-seals',
  sql: `
CREATE TABLE ledger_keys (
  id text PRIMARY KEY,
  public_key text NOT NULL,
  added_at timestamptz NOT NULL
);
CREATE TABLE audit_checkpoints (
  seq bigint PRIMARY KEY CHECK (seq >= 1),
  kind text NOT NULL CHECK (kind IN ('seal', 'prune')),
  first_id bigint NOT NULL,
  last_id bigint NOT NULL,
  row_count bigint NOT NULL CHECK (row_count >= 0),
  leaves bytea,
  root text NOT NULL,
  prev_hash text NOT NULL,
  hash text NOT NULL,
  key_id text NOT NULL,
  signature text NOT NULL,
  sealed_at timestamptz NOT NULL,
  through_seq bigint,
  CHECK ((kind = 'seal') = (leaves IS NOT NULL)),
  CHECK ((kind = 'prune') = (through_seq IS NOT NULL))
);

CREATE OR REPLACE FUNCTION audit_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' AND TG_TABLE_NAME <> 'ledger_keys'
     AND current_setting('baton.ledger_prune', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END
$fn$;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER ledger_keys_no_update BEFORE UPDATE ON ledger_keys
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER ledger_keys_no_delete BEFORE DELETE ON ledger_keys
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();

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
  (SELECT coalesce(jsonb_agg(jsonb_build_object('key', t.key, 'epoch', c.epoch, 'outcome', c.outcome,
       'claimedAt', (extract(epoch FROM c.claimed_at) * 1000)::bigint,
       'releasedAt', (extract(epoch FROM c.released_at) * 1000)::bigint) ORDER BY c.id), '[]'::jsonb)
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
