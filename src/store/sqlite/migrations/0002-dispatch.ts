/**
 * Dispatch across hosts: the hosts table (the seed's server capacity table, with live free RAM),
 * and on jobs the placing term, the retry backoff, the agent's session and pid, and output tail.
 */
export default {
  version: 2,
  name: 'dispatch',
  sql: `
CREATE TABLE hosts (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  session_id INTEGER REFERENCES sessions (id),
  ram_total_mb INTEGER NOT NULL CHECK (ram_total_mb >= 0),
  ram_reserved_mb INTEGER NOT NULL DEFAULT 0 CHECK (ram_reserved_mb >= 0),
  ram_free_mb INTEGER NOT NULL CHECK (ram_free_mb >= 0),
  slots_max INTEGER NOT NULL CHECK (slots_max >= 0),
  heartbeat_at INTEGER NOT NULL,
  registered_at INTEGER NOT NULL
);

ALTER TABLE jobs ADD COLUMN run_after INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN term INTEGER;
ALTER TABLE jobs ADD COLUMN agent_session_id INTEGER REFERENCES sessions (id);
ALTER TABLE jobs ADD COLUMN pid INTEGER;
ALTER TABLE jobs ADD COLUMN output_tail TEXT;
CREATE INDEX jobs_active_by_session ON jobs (session_id) WHERE status IN ('claimed', 'running');
CREATE INDEX jobs_active_by_host ON jobs (host) WHERE status IN ('claimed', 'running');
CREATE INDEX sessions_live ON sessions (heartbeat_at) WHERE state = 'live';
`,
};
