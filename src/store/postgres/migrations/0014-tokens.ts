/**
 * API tokens and the token of every ledger row (issue 17; decision 0012), as in the SQLite
 * migration of the same number:
 * - `tokens`: a secret's sha256 only, its scope and binding, expiry on the database clock.
 * - `audit_events.token_id`: the token a row was written with. Its default reads the connection's
 *   `baton.token` setting, which the executor sets for calls made by an API request (actor.ts), so
 *   every statement that writes the ledger records it unchanged. Old rows read NULL there, which
 *   the ledger's hashes leave out, so their seals still verify.
 */
export default {
  version: 14,
  name: 'tokens',
  sql: `
CREATE TABLE tokens (
  id text PRIMARY KEY,
  hash text NOT NULL UNIQUE,
  scope text NOT NULL CHECK (scope IN ('viewer', 'agent', 'host', 'operator')),
  session_id bigint REFERENCES sessions (id),
  host text,
  name text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  CHECK ((scope = 'agent') = (session_id IS NOT NULL)),
  CHECK ((scope = 'host') = (host IS NOT NULL))
);
ALTER TABLE audit_events ADD COLUMN token_id text
  DEFAULT nullif(current_setting('baton.token', true), '');
CREATE INDEX audit_by_token ON audit_events (token_id, id) WHERE token_id IS NOT NULL;
`,
};
