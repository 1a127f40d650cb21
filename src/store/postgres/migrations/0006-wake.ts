/**
 * Wake-ups (store/wakeups.ts): NOTIFY baton_wake when work may have appeared or capacity freed,
 * so idle dispatchers, runners and workers look again at once. Sent for: any insert into jobs
 * (an enqueue or retry; one per statement), a job whose status becomes queued (a requeue) or
 * changes while it carries a dispatcher term (a placement, and the end that frees its slot), and
 * any release of a workspace lock. Not sent for a pull-mode worker's own claims and finishes
 * (no term): those are the hot path, and NOTIFY serialises the commits that send it.
 */
export default {
  version: 6,
  name: 'wake',
  sql: `
CREATE FUNCTION baton_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('baton_wake', '');
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_wake_insert AFTER INSERT ON jobs
  FOR EACH STATEMENT EXECUTE FUNCTION baton_wake();
CREATE TRIGGER jobs_wake_update AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status AND (NEW.status = 'queued' OR NEW.term IS NOT NULL))
  EXECUTE FUNCTION baton_wake();
CREATE TRIGGER workspace_locks_wake AFTER DELETE ON workspace_locks
  FOR EACH STATEMENT EXECUTE FUNCTION baton_wake();
`,
};
