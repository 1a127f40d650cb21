/**
 * Wake-ups (0006) for what a waiter can act on, and a placement's marked:
 * - A placed job's start (claimed → running) no longer wakes anyone: it frees no slot and places
 *   nothing (the fleet counts claimed and running jobs alike, and a started job's RAM stays
 *   pending until its host's next heartbeat). It woke every dispatcher and runner to read the
 *   queue again, beside the run's own calls (docs/decisions/0019, section 7).
 * - A placement (a job claimed under a term) says so in its payload, `placed`, so a store can
 *   tell its own placements from other writers' (postgres/wakeups.ts): its dispatcher hands the
 *   jobs it placed to its runner without one. Every other wake keeps the empty payload, so a
 *   transaction still sends at most one of each.
 */
export default {
  version: 24,
  name: 'placement-wake',
  sql: `
CREATE FUNCTION baton_wake_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('baton_wake', CASE WHEN NEW.status = 'claimed' THEN 'placed' ELSE '' END);
  RETURN NULL;
END $$;
DROP TRIGGER jobs_wake_update ON jobs;
CREATE TRIGGER jobs_wake_update AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status
    AND NOT (OLD.status = 'claimed' AND NEW.status = 'running')
    AND (NEW.status = 'queued' OR NEW.term IS NOT NULL))
  EXECUTE FUNCTION baton_wake_job();
`,
};
