/**
 * Task dependencies (docs/decisions/0035-task-dependencies.md), as PostgreSQL's 0033: `task_id`
 * waits until `depends_on` is done. The primary key leads with the waiting task, the probe every
 * claim and placement makes (taskOpen in claim-set.ts); the second index serves "what waits for
 * it" and the cycle check's walk.
 */
export default {
  version: 33,
  name: 'task-dependencies',
  sql: `
CREATE TABLE task_deps (
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  depends_on INTEGER NOT NULL REFERENCES tasks (id),
  added_at INTEGER NOT NULL,
  added_by TEXT NOT NULL CHECK (length(added_by) <= 200),
  PRIMARY KEY (task_id, depends_on),
  CHECK (task_id <> depends_on)
) WITHOUT ROWID;
CREATE INDEX task_deps_depends_on ON task_deps (depends_on, task_id);
`,
};
