/**
 * Dispatch across hosts: the hosts table (the seed's server capacity table, with live free RAM),
 * and on jobs the placing term, the retry backoff, the agent's session and pid, and output tail.
 * The same columns, constraints and indexes as SQLite's 0002; times are timestamptz, `enabled`
 * is a boolean, and host names sort by code point (COLLATE "C") as SQLite's BINARY does.
 *
 * run_after defaults to the Unix epoch, not '-infinity': the domain value is milliseconds and
 * SQLite's default is 0, so a job that never waited reads as runAfter 0 on both engines. A
 * constant default adds the column without rewriting the table.
 */
export default {
  version: 2,
  name: 'dispatch',
  sql: `
CREATE TABLE hosts (
  name text COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  enabled boolean NOT NULL DEFAULT true,
  session_id bigint REFERENCES sessions (id),
  ram_total_mb integer NOT NULL CHECK (ram_total_mb >= 0),
  ram_reserved_mb integer NOT NULL DEFAULT 0 CHECK (ram_reserved_mb >= 0),
  ram_free_mb integer NOT NULL CHECK (ram_free_mb >= 0),
  slots_max integer NOT NULL CHECK (slots_max >= 0),
  heartbeat_at timestamptz NOT NULL,
  registered_at timestamptz NOT NULL
);

ALTER TABLE jobs ADD COLUMN run_after timestamptz NOT NULL DEFAULT 'epoch';
ALTER TABLE jobs ADD COLUMN term bigint;
ALTER TABLE jobs ADD COLUMN agent_session_id bigint REFERENCES sessions (id);
ALTER TABLE jobs ADD COLUMN pid integer;
ALTER TABLE jobs ADD COLUMN output_tail text;
CREATE INDEX jobs_active_by_session ON jobs (session_id) WHERE status IN ('claimed', 'running');
CREATE INDEX jobs_active_by_host ON jobs (host) WHERE status IN ('claimed', 'running');
CREATE INDEX sessions_live ON sessions (heartbeat_at) WHERE state = 'live';
`,
};
