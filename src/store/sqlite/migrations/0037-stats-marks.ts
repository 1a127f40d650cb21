/**
 * Marks of stats()' running counts (docs/decisions/0040), as PostgreSQL's 0037. A store keeps
 * counts of the jobs, claims and tasks it has read once, exact while no row it counted as final
 * changes: nothing on the hot paths deletes a job or a claim (job retention does, in passes of
 * its own), and a done or closed task changes only when reopened. Each such change bumps its
 * table's mark here (SQLite's triggers run per row), and a store whose counts were kept under
 * another mark counts again from the first row. A task's update that finishes it (open to done)
 * only has the trigger's WHEN tested, and writes nothing more.
 */
export default {
  version: 37,
  name: 'stats-marks',
  sql: `
CREATE TABLE stats_marks (
  tbl TEXT PRIMARY KEY CHECK (tbl IN ('jobs', 'claims', 'tasks')),
  n INTEGER NOT NULL DEFAULT 0
);
INSERT INTO stats_marks (tbl) VALUES ('jobs'), ('claims'), ('tasks');
CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = 'jobs';
END;
CREATE TRIGGER claims_deleted AFTER DELETE ON claims
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = 'claims';
END;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = 'tasks';
END;
CREATE TRIGGER tasks_final_changed AFTER UPDATE OF state, gate, state_at ON tasks
  WHEN OLD.state IN ('done', 'closed') AND (NEW.state IS NOT OLD.state OR NEW.gate IS NOT OLD.gate
    OR NEW.state_at IS NOT OLD.state_at)
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = 'tasks';
END;
`,
};
