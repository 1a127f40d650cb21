/**
 * The workspace concurrency model (docs/architecture.md#lock-per-workspace): workspaces, the agents
 * and projects bound to them, each task's filesystem requirement and explicit workspace, and
 * exclusive workspace locks.
 *
 * The backfill of tasks.requires_filesystem follows docs/decisions/0003-requires-filesystem-
 * backfill.md: 1 only on positive evidence, 0 for everything else. The same rule, in the same
 * words, is in the PostgreSQL migration.
 */
export default {
  version: 3,
  name: 'workspaces',
  sql: `
CREATE TABLE workspaces (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  path TEXT NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
  kind TEXT NOT NULL DEFAULT 'dir' CHECK (kind IN ('dir', 'worktree')),
  -- The epoch of the newest lock ever granted on the workspace; 0 when never locked.
  lock_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lock_epoch >= 0),
  created_at INTEGER NOT NULL
);

CREATE TABLE agents (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  role TEXT NOT NULL CHECK (length(role) BETWEEN 1 AND 100),
  department TEXT CHECK (department IS NULL OR length(department) BETWEEN 1 AND 100),
  workspace TEXT REFERENCES workspaces (name),
  created_at INTEGER NOT NULL
);

CREATE TABLE projects (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  primary_workspace TEXT REFERENCES workspaces (name),
  created_at INTEGER NOT NULL
);

ALTER TABLE tasks ADD COLUMN requires_filesystem INTEGER NOT NULL DEFAULT 0
  CHECK (requires_filesystem IN (0, 1));
ALTER TABLE tasks ADD COLUMN workspace TEXT REFERENCES workspaces (name);

-- One row per live lock: the primary key is the constraint that allows at most one per
-- workspace, whatever path wrote it. Released locks leave the table; the ledger keeps them.
CREATE TABLE workspace_locks (
  workspace TEXT PRIMARY KEY REFERENCES workspaces (name),
  job_id INTEGER REFERENCES jobs (id),
  session_id INTEGER NOT NULL REFERENCES sessions (id),
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  acquired_at INTEGER NOT NULL
);
CREATE INDEX workspace_locks_by_session ON workspace_locks (session_id);

-- Backfill. In flight: a live claim, or a job claimed or running. Queued: a queued job.
-- Backlog: no job ever, no live claim, and no claim that ended done or failed as the newest.
-- An engineering assignee: the assignee text matches the coding-role pattern
-- /cto|engineer|developer|devops|sre/i (agents did not exist before this migration).
UPDATE tasks SET requires_filesystem = 1
WHERE holder_session_id IS NOT NULL
  OR EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ('claimed', 'running'))
  OR (
    (lower(assignee) LIKE '%cto%' OR lower(assignee) LIKE '%engineer%'
      OR lower(assignee) LIKE '%developer%' OR lower(assignee) LIKE '%devops%'
      OR lower(assignee) LIKE '%sre%')
    AND (
      EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id AND j.status = 'queued')
      OR (
        NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id)
        AND coalesce(
          (SELECT c.outcome FROM claims c WHERE c.task_id = tasks.id ORDER BY c.epoch DESC LIMIT 1),
          'none') NOT IN ('done', 'failed')
      )
    )
  );
`,
};
