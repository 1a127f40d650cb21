/**
 * The GitHub outbox's job triggers fire only for jobs of `github:` tasks, decided in C by a WHEN
 * clause on a column the job carries (`jobs.github`), not in plpgsql after the fact. The statement
 * trigger of 0023 captured both transition tables of every UPDATE of jobs, status or not, and each
 * enqueue still called plpgsql once (0015's insert trigger); on a queue without GitHub tasks both
 * found nothing to write. Measured with bench/ladder.ts (docs/decisions/0017, "A ladder of
 * prototypes"): the batch drain without the statement trigger ran 1.09× as fast. A github job's
 * change is again one plpgsql call per row (0015's function), as before 0023: GitHub-driven jobs
 * come one by one. The rows written are the same.
 *
 * The enqueue and the retry set the column from the task's key. An insert that leaves it out (a
 * process still running the code before this migration, a script) gets it from the key too: the
 * column has no default, and a BEFORE trigger, which fires only then, fills it in before NOT NULL
 * is checked. SQLite's triggers test the key in their WHEN clauses already.
 */
export default {
  version: 25,
  name: 'outbox-github-jobs',
  sql: `
ALTER TABLE jobs ADD COLUMN github boolean NOT NULL DEFAULT false;
UPDATE jobs SET github = true FROM tasks WHERE tasks.id = jobs.task_id AND left(tasks.key, 7) = 'github:';
ALTER TABLE jobs ALTER COLUMN github DROP DEFAULT;
CREATE FUNCTION baton_job_github() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.github := EXISTS (SELECT 1 FROM tasks WHERE id = NEW.task_id AND left(key, 7) = 'github:');
  RETURN NEW;
END $$;
CREATE TRIGGER jobs_github BEFORE INSERT ON jobs
  FOR EACH ROW WHEN (NEW.github IS NULL) EXECUTE FUNCTION baton_job_github();
DROP TRIGGER github_outbox_job_status ON jobs;
DROP FUNCTION baton_github_outbox_jobs();
DROP TRIGGER github_outbox_job_insert ON jobs;
CREATE TRIGGER github_outbox_job_insert AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.github) EXECUTE FUNCTION baton_github_outbox_job();
CREATE TRIGGER github_outbox_job_status AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN (NEW.github AND NEW.status IS DISTINCT FROM OLD.status)
  EXECUTE FUNCTION baton_github_outbox_job();
`,
};
