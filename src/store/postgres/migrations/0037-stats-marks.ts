/**
 * Marks of stats()' running counts (docs/decisions/0040). A store keeps counts of the jobs,
 * claims and tasks it has read once, exact while no row it counted as final changes: nothing on
 * the hot paths deletes a job or a claim (job retention does, in passes of its own), and a done
 * or closed task changes only when reopened. Each statement that deletes rows (one that removed
 * none bumps nothing), and each change of a final task, bumps its table's mark here, and a store
 * whose counts were kept under another mark counts again from the first row. A task's update that
 * finishes it (open to done) only has the trigger's WHEN tested, and calls nothing.
 */
export default {
  version: 37,
  name: 'stats-marks',
  sql: `
CREATE TABLE stats_marks (
  tbl text PRIMARY KEY CHECK (tbl IN ('jobs', 'claims', 'tasks')),
  n bigint NOT NULL DEFAULT 0
);
INSERT INTO stats_marks (tbl) VALUES ('jobs'), ('claims'), ('tasks');
CREATE FUNCTION stats_marks_bump() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE stats_marks SET n = n + 1 WHERE tbl = TG_TABLE_NAME;
  RETURN NULL;
END;
$fn$;
CREATE FUNCTION stats_marks_bump_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM gone) THEN
    UPDATE stats_marks SET n = n + 1 WHERE tbl = TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END;
$fn$;
CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION stats_marks_bump_deleted();
CREATE TRIGGER claims_deleted AFTER DELETE ON claims REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION stats_marks_bump_deleted();
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION stats_marks_bump_deleted();
CREATE TRIGGER tasks_final_changed AFTER UPDATE OF state, gate, state_at ON tasks FOR EACH ROW
  WHEN (OLD.state IN ('done', 'closed') AND (NEW.state IS DISTINCT FROM OLD.state
    OR NEW.gate IS DISTINCT FROM OLD.gate OR NEW.state_at IS DISTINCT FROM OLD.state_at))
  EXECUTE FUNCTION stats_marks_bump();
`,
};
