/** The coordination kernel: sessions, tasks, claims, jobs, leases and the audit ledger. */
export default {
  version: 1,
  name: 'kernel',
  sql: `
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('agent', 'human', 'daemon')),
  host TEXT NOT NULL CHECK (length(host) BETWEEN 1 AND 100),
  pid INTEGER NOT NULL CHECK (pid >= 0),
  name TEXT CHECK (name IS NULL OR length(name) <= 100),
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  ended_at INTEGER,
  state TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'ended', 'stale')),
  CHECK ((state = 'live') = (ended_at IS NULL))
);

CREATE TABLE tasks (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE CHECK (length(key) BETWEEN 1 AND 200),
  title TEXT NOT NULL DEFAULT '' CHECK (length(title) <= 500),
  priority INTEGER NOT NULL DEFAULT 100 CHECK (priority BETWEEN 0 AND 1000),
  project TEXT CHECK (project IS NULL OR length(project) <= 100),
  assignee TEXT CHECK (assignee IS NULL OR length(assignee) <= 100),
  labels TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL,
  -- The lock word: the epoch of the newest grant and the live holder. The claims table below
  -- is the history, and its partial unique index is the constraint behind this guard.
  epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  holder_session_id INTEGER REFERENCES sessions (id),
  claimed_at INTEGER,
  CHECK ((holder_session_id IS NULL) = (claimed_at IS NULL))
);

CREATE TABLE claims (
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  session_id INTEGER NOT NULL REFERENCES sessions (id),
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  claimed_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  released_at INTEGER,
  outcome TEXT CHECK (outcome IN ('done', 'failed', 'released', 'abandoned', 'recovered')),
  CHECK ((released_at IS NULL) = (outcome IS NULL)),
  UNIQUE (task_id, epoch)
);
-- At most one live claim per task, whatever path wrote it.
CREATE UNIQUE INDEX claims_one_live_per_task ON claims (task_id) WHERE released_at IS NULL;
CREATE INDEX claims_live_by_session ON claims (session_id) WHERE released_at IS NULL;

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  status TEXT NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'claimed', 'running', 'done', 'failed', 'oom_killed', 'cancelled')),
  priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 1000),
  queued_at INTEGER NOT NULL,
  ram_mb INTEGER CHECK (ram_mb IS NULL OR ram_mb >= 0),
  command TEXT CHECK (command IS NULL OR length(command) <= 4000),
  attempt INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  attempt_max INTEGER NOT NULL DEFAULT 3 CHECK (attempt_max >= 1),
  epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  session_id INTEGER REFERENCES sessions (id),
  host TEXT,
  claimed_at INTEGER,
  started_at INTEGER,
  finished_at INTEGER,
  exit_code INTEGER,
  reason TEXT,
  CHECK (attempt <= attempt_max)
);
CREATE INDEX jobs_queue ON jobs (priority, queued_at, id) WHERE status = 'queued';
CREATE UNIQUE INDEX jobs_one_active_per_task ON jobs (task_id)
  WHERE status IN ('queued', 'claimed', 'running');
CREATE INDEX jobs_by_task ON jobs (task_id, id);

CREATE TABLE leases (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  holder TEXT,
  term INTEGER NOT NULL CHECK (term >= 1),
  acquired_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE TABLE audit_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  type TEXT NOT NULL,
  task_key TEXT,
  job_id INTEGER,
  session_id INTEGER,
  host TEXT,
  epoch INTEGER,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_key ON audit_events (task_key, id) WHERE task_key IS NOT NULL;
CREATE INDEX audit_by_session ON audit_events (session_id, id) WHERE session_id IS NOT NULL;
CREATE INDEX audit_by_job ON audit_events (job_id, id) WHERE job_id IS NOT NULL;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
`,
};
