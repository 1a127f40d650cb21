/**
 * Wake-ups (0006): a placed job's start (claimed → running) no longer counts. It frees no slot
 * and places nothing (the fleet counts claimed and running jobs alike, and a started job's RAM
 * stays pending until its host's next heartbeat), and it woke every dispatcher and runner to read
 * the queue again, beside the run's own calls (docs/decisions/0019, section 7). As PostgreSQL's
 * 0024.
 */
export default {
  version: 22,
  name: 'quiet-start',
  sql: `
DROP TRIGGER jobs_wake_update;
CREATE TRIGGER jobs_wake_update AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN NEW.status IS NOT OLD.status
    AND NOT (OLD.status = 'claimed' AND NEW.status = 'running')
    AND (NEW.status = 'queued' OR NEW.term IS NOT NULL)
BEGIN
  UPDATE wake SET n = n + 1 WHERE id = 1;
END;
`,
};
