/**
 * Wake-ups (store/wakeups.ts), as PostgreSQL's 0006 sends them, counted in a one-row table that
 * waiting processes poll (sqlite/wakeups.ts): any insert into jobs, a job whose status becomes
 * queued or changes while it carries a dispatcher term, and any release of a workspace lock. Not
 * for a pull-mode worker's own claims and finishes (no term), the hot path.
 */
export default {
  version: 6,
  name: 'wake',
  sql: `
CREATE TABLE wake (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT INTO wake (id, n) VALUES (1, 0);
CREATE TRIGGER jobs_wake_insert AFTER INSERT ON jobs
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER jobs_wake_update AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN NEW.status IS NOT OLD.status AND (NEW.status = 'queued' OR NEW.term IS NOT NULL)
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER workspace_locks_wake AFTER DELETE ON workspace_locks
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
`,
};
