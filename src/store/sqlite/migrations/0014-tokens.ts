/**
 * API tokens and the token of every ledger row (issue 17; decision 0012):
 * - `tokens`: a secret's sha256 only, its scope and binding, expiry on the database clock.
 * - `audit_events.token_id`: the token a row was written with; appendAudit (rows.ts) writes the
 *   one the caller acts with (actor.ts). Old rows read NULL there, which the ledger's hashes leave
 *   out, so their seals still verify.
 */
export default {
  version: 14,
  name: 'tokens',
  sql: `
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  scope TEXT NOT NULL CHECK (scope IN ('viewer', 'agent', 'host', 'operator')),
  session_id INTEGER REFERENCES sessions (id),
  host TEXT,
  name TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  CHECK ((scope = 'agent') = (session_id IS NOT NULL)),
  CHECK ((scope = 'host') = (host IS NOT NULL))
);
ALTER TABLE audit_events ADD COLUMN token_id TEXT;
CREATE INDEX audit_by_token ON audit_events (token_id, id) WHERE token_id IS NOT NULL;
`,
};
