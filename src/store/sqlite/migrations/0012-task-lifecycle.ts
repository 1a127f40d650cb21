/**
 * The task lifecycle (core/task.ts), human sessions and settings:
 * - tasks get their state (open, in_review, done, closed, escalated) with when, by whom and why,
 *   a gate, the review flag, a body, a URL and the last rejection's reason;
 * - sessions get their own TTL (null: held to the rescuer's --stale-after);
 * - jobs may end `escalated`, claims `escalated` or `expired` (taken over past the TTL): SQLite
 *   cannot change a CHECK in place, so both tables are rebuilt (the migration runs with foreign
 *   keys off and checks them before it commits: sqlite-store.ts) with their indexes and triggers;
 * - settings: named values the store keeps (the vague-issue rule's `vague-words`).
 *
 * The backfill puts every task in the state its jobs and claims imply
 * (docs/decisions/0010-task-lifecycle.md): done when its latest ending (a job that ended done,
 * failed or oom_killed, a claim released done or failed) was done and nothing is active on it
 * (no live claim, no active job); open otherwise. Each task put in done gets a `task:state` row.
 */
export default {
  version: 12,
  name: 'task-lifecycle',
  sql: `
ALTER TABLE sessions ADD COLUMN ttl_ms INTEGER CHECK (ttl_ms IS NULL OR ttl_ms >= 1);

ALTER TABLE tasks ADD COLUMN state TEXT NOT NULL DEFAULT 'open'
  CHECK (state IN ('open', 'in_review', 'done', 'closed', 'escalated'));
ALTER TABLE tasks ADD COLUMN state_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN state_by TEXT CHECK (state_by IS NULL OR length(state_by) <= 200);
ALTER TABLE tasks ADD COLUMN state_reason TEXT CHECK (state_reason IS NULL OR length(state_reason) <= 2000);
ALTER TABLE tasks ADD COLUMN gate TEXT CHECK (gate IS NULL OR gate IN ('design'));
ALTER TABLE tasks ADD COLUMN review_required INTEGER NOT NULL DEFAULT 0 CHECK (review_required IN (0, 1));
ALTER TABLE tasks ADD COLUMN body TEXT NOT NULL DEFAULT '' CHECK (length(body) <= 65536);
ALTER TABLE tasks ADD COLUMN url TEXT CHECK (url IS NULL OR length(url) <= 2000);
ALTER TABLE tasks ADD COLUMN feedback TEXT CHECK (feedback IS NULL OR length(feedback) <= 2000);

CREATE TABLE settings (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  value TEXT NOT NULL CHECK (length(value) <= 1000),
  updated_at INTEGER NOT NULL,
  updated_by TEXT CHECK (updated_by IS NULL OR length(updated_by) <= 200)
);

CREATE TABLE jobs_new (
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN
    ('queued', 'claimed', 'running', 'done', 'failed', 'oom_killed', 'cancelled', 'escalated')),
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
  run_after INTEGER NOT NULL DEFAULT 0,
  term INTEGER,
  agent_session_id INTEGER REFERENCES sessions (id),
  pid INTEGER,
  output_tail TEXT,
  CHECK (attempt <= attempt_max)
);
INSERT INTO jobs_new (id, task_id, status, priority, queued_at, ram_mb, command, attempt, attempt_max,
  epoch, session_id, host, claimed_at, started_at, finished_at, exit_code, reason, run_after, term,
  agent_session_id, pid, output_tail)
SELECT id, task_id, status, priority, queued_at, ram_mb, command, attempt, attempt_max,
  epoch, session_id, host, claimed_at, started_at, finished_at, exit_code, reason, run_after, term,
  agent_session_id, pid, output_tail
FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_queue ON jobs (priority, queued_at, id, run_after) WHERE status = 'queued';
CREATE UNIQUE INDEX jobs_one_active_per_task ON jobs (task_id)
  WHERE status IN ('queued', 'claimed', 'running');
CREATE INDEX jobs_by_task ON jobs (task_id, id);
CREATE INDEX jobs_active ON jobs (session_id, host) WHERE status IN ('claimed', 'running');
CREATE INDEX jobs_active_by_host ON jobs (host) WHERE status IN ('claimed', 'running');
CREATE TRIGGER jobs_wake_insert AFTER INSERT ON jobs
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER jobs_wake_update AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN NEW.status IS NOT OLD.status AND (NEW.status = 'queued' OR NEW.term IS NOT NULL)
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER jobs_command_fixed BEFORE UPDATE OF command ON jobs
  WHEN NEW.command IS NOT OLD.command
  BEGIN SELECT RAISE(ABORT, 'a job''s command never changes once queued'); END;

CREATE TABLE claims_new (
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  session_id INTEGER NOT NULL REFERENCES sessions (id),
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  claimed_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  released_at INTEGER,
  outcome TEXT CHECK (outcome IN
    ('done', 'failed', 'released', 'abandoned', 'recovered', 'escalated', 'expired')),
  CHECK ((released_at IS NULL) = (outcome IS NULL)),
  UNIQUE (task_id, epoch)
);
INSERT INTO claims_new (id, task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome)
SELECT id, task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome FROM claims;
DROP TABLE claims;
ALTER TABLE claims_new RENAME TO claims;
CREATE UNIQUE INDEX claims_one_live_per_task ON claims (task_id) WHERE released_at IS NULL;
CREATE INDEX claims_live_by_session ON claims (session_id) WHERE released_at IS NULL;

WITH endings AS (
  SELECT task_id, finished_at AS at, status AS outcome, 'job ' || id AS by, 0 AS src, id
  FROM jobs WHERE status IN ('done', 'failed', 'oom_killed') AND finished_at IS NOT NULL
  UNION ALL
  SELECT task_id, released_at, outcome, 'session ' || session_id, 1, id
  FROM claims WHERE outcome IN ('done', 'failed')
), latest AS (
  SELECT task_id, at, outcome, by,
    row_number() OVER (PARTITION BY task_id ORDER BY at DESC, src DESC, id DESC) AS n
  FROM endings
)
UPDATE tasks SET state = 'done', state_at = latest.at, state_by = latest.by
FROM latest
WHERE latest.task_id = tasks.id AND latest.n = 1 AND latest.outcome = 'done'
  AND tasks.holder_session_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ('queued', 'claimed', 'running'));
UPDATE tasks SET state_at = created_at WHERE state = 'open';
INSERT INTO audit_events (at, type, task_key, detail)
SELECT state_at, 'task:state', key,
  json_object('from', 'open', 'to', 'done', 'action', 'backfill', 'by', state_by)
FROM tasks WHERE state = 'done' ORDER BY state_at, id;
`,
};
