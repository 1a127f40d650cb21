/**
 * The GitHub outbox's job trigger (0015) once per statement over its transition tables instead of
 * once per changed row: a batch that finishes 500 jobs made 500 plpgsql calls (2.5-7 ms of a
 * 20-40 ms statement; docs/decisions/0017, "Session of 2026-12-03"). The rows it writes are the
 * same: one `labels` row per job whose status changed, for a task whose key is `github:…`.
 * Transition tables do not combine with `UPDATE OF status`, so it fires for every UPDATE of jobs
 * and compares the old and new status itself. The task's key is read by id in a subquery, so
 * the plan plpgsql keeps probes tasks_pkey per changed row whatever size of statement planned it.
 * The insert trigger stays per row (one job per enqueue). SQLite keeps its per-row trigger.
 */
export default {
  version: 23,
  name: 'outbox-per-statement',
  sql: `
CREATE FUNCTION baton_github_outbox_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO github_outbox (task_key, kind, cause, created_at)
  SELECT c.key, 'labels', 'job:' || c.status, clock_timestamp()
  FROM (
    SELECT n.id, n.status, (SELECT key FROM tasks WHERE tasks.id = n.task_id) AS key
    FROM baton_new_jobs n JOIN baton_old_jobs o ON o.id = n.id
    WHERE n.status IS DISTINCT FROM o.status
  ) c
  WHERE left(c.key, 7) = 'github:'
  ORDER BY c.id;
  RETURN NULL;
END $$;
DROP TRIGGER github_outbox_job_status ON jobs;
CREATE TRIGGER github_outbox_job_status AFTER UPDATE ON jobs
  REFERENCING OLD TABLE AS baton_old_jobs NEW TABLE AS baton_new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION baton_github_outbox_jobs();
`,
};
