/**
 * Progress marks (core/progress.ts): one record per session, its counters and its last mark, and
 * when a job of that session was marked stalled. The same table as SQLite's 0010. Kept apart from
 * `sessions`, whose heartbeat is liveness only, and from `jobs`, so the queue's hot rows and
 * statements are untouched.
 */
export default {
  version: 10,
  name: 'progress',
  sql: `
CREATE TABLE progress (
  session_id bigint PRIMARY KEY REFERENCES sessions (id),
  output_bytes bigint NOT NULL DEFAULT 0 CHECK (output_bytes >= 0),
  files_changed bigint NOT NULL DEFAULT 0 CHECK (files_changed >= 0),
  commits bigint NOT NULL DEFAULT 0 CHECK (commits >= 0),
  effects bigint NOT NULL DEFAULT 0 CHECK (effects >= 0),
  tool_calls bigint NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),
  last_at timestamptz,
  note text CHECK (note IS NULL OR length(note) <= 200),
  stalled_at timestamptz
);
`,
};
