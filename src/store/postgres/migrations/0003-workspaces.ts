/**
 * The workspace concurrency model (docs/architecture.md#lock-per-workspace): the same tables,
 * columns, constraints and backfill as the SQLite migration. Names sort by code point (COLLATE
 * "C"); requires_filesystem is a boolean here and 0/1 there. See
 * docs/decisions/0003-requires-filesystem-backfill.md.
 */
export default {
  version: 3,
  name: 'workspaces',
  sql: `
CREATE TABLE workspaces (
  name text COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  path text NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
  kind text NOT NULL DEFAULT 'dir' CHECK (kind IN ('dir', 'worktree')),
  -- The epoch of the newest lock ever granted on the workspace; 0 when never locked.
  lock_epoch bigint NOT NULL DEFAULT 0 CHECK (lock_epoch >= 0),
  created_at timestamptz NOT NULL
);

CREATE TABLE agents (
  name text COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  role text NOT NULL CHECK (length(role) BETWEEN 1 AND 100),
  department text CHECK (department IS NULL OR length(department) BETWEEN 1 AND 100),
  workspace text COLLATE "C" REFERENCES workspaces (name),
  created_at timestamptz NOT NULL
);

CREATE TABLE projects (
  name text COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  primary_workspace text COLLATE "C" REFERENCES workspaces (name),
  created_at timestamptz NOT NULL
);

ALTER TABLE tasks ADD COLUMN requires_filesystem boolean NOT NULL DEFAULT false;
ALTER TABLE tasks ADD COLUMN workspace text COLLATE "C" REFERENCES workspaces (name);

-- One row per live lock: the primary key is the constraint that allows at most one per
-- workspace, whatever path wrote it. Released locks leave the table; the ledger keeps them.
CREATE TABLE workspace_locks (
  workspace text COLLATE "C" PRIMARY KEY REFERENCES workspaces (name),
  job_id bigint REFERENCES jobs (id),
  session_id bigint NOT NULL REFERENCES sessions (id),
  epoch bigint NOT NULL CHECK (epoch >= 1),
  acquired_at timestamptz NOT NULL
);
CREATE INDEX workspace_locks_by_session ON workspace_locks (session_id);

-- Backfill. In flight: a live claim, or a job claimed or running. Queued: a queued job.
-- Backlog: no job ever, no live claim, and no claim that ended done or failed as the newest.
-- An engineering assignee: the assignee text matches the coding-role pattern
-- /cto|engineer|developer|devops|sre/i (agents did not exist before this migration).
UPDATE tasks SET requires_filesystem = true
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
