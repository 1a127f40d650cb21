/**
 * Fenced side effects: one append-only row per effect a claim holder reported and the store
 * accepted, carrying the claim's session and epoch. Rows are never updated or deleted.
 */
export default {
  version: 4,
  name: 'effects',
  sql: `
CREATE TABLE effects (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL REFERENCES tasks (id),
  session_id INTEGER NOT NULL REFERENCES sessions (id),
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 100),
  payload TEXT NOT NULL DEFAULT '{}' CHECK (length(payload) <= 16384),
  recorded_at INTEGER NOT NULL
);
CREATE INDEX effects_by_task ON effects (task_id, id);
CREATE TRIGGER effects_no_update BEFORE UPDATE ON effects
BEGIN SELECT RAISE(ABORT, 'effects is append-only'); END;
CREATE TRIGGER effects_no_delete BEFORE DELETE ON effects
BEGIN SELECT RAISE(ABORT, 'effects is append-only'); END;
`,
};
