/**
 * A resolve's note reaches the GitHub issue, as SQLite's 0052 (docs/decisions/0062, amendment "the
 * note on GitHub"): 0015's task function, replaced whole, also writes a `comment` row
 * `task:resolved` when a github: task leaves `escalated` for `open` with a note (its
 * `state_reason`; only `baton resolve` makes that move), after the move's labels row and in its
 * transaction. A resolve without a note writes none. `actor` keeps who resolved (`state_by` then);
 * other rows leave it NULL. The triggers that call the function are unchanged.
 */
export default {
  version: 52,
  name: 'resolve-note-comment',
  sql: `
ALTER TABLE github_outbox ADD COLUMN actor text CHECK (actor IS NULL OR length(actor) <= 200);
-- plpgsql does not promise to stop at the first false AND, so each test of OLD stands alone.
CREATE OR REPLACE FUNCTION baton_github_outbox_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  cause text := 'task:' || NEW.state;
  was text := NULL;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    was := OLD.state;
    IF NEW.state IS NOT DISTINCT FROM OLD.state THEN
      cause := CASE WHEN NEW.holder_session_id IS NULL THEN 'claim:released' ELSE 'claim:granted' END;
    END IF;
  END IF;
  INSERT INTO github_outbox (task_key, kind, cause, created_at)
  VALUES (NEW.key, 'labels', cause, clock_timestamp());
  IF NEW.state = 'escalated' AND was IS DISTINCT FROM 'escalated' AND NEW.state_reason IS NOT NULL THEN
    INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
    VALUES (NEW.key, 'comment', 'task:escalated', left(NEW.state_reason, 4000), clock_timestamp());
  END IF;
  IF was = 'in_review' AND NEW.state = 'open' AND NEW.feedback IS NOT NULL THEN
    INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
    VALUES (NEW.key, 'comment', 'task:rejected', left(NEW.feedback, 4000), clock_timestamp());
  END IF;
  IF was = 'escalated' AND NEW.state = 'open' AND NEW.state_reason IS NOT NULL THEN
    INSERT INTO github_outbox (task_key, kind, cause, body, actor, created_at)
    VALUES (NEW.key, 'comment', 'task:resolved', left(NEW.state_reason, 4000), left(NEW.state_by, 200),
            clock_timestamp());
  END IF;
  RETURN NULL;
END $$;
`,
};
