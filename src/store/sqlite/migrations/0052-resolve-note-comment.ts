/**
 * A resolve's note reaches the GitHub issue (docs/decisions/0062, amendment "the note on GitHub";
 * decision 0013's outbox): when a github: task leaves `escalated` for `open` with a note (its
 * `state_reason`; only `baton resolve` makes that move), the tasks table's state trigger writes a
 * `comment` row `task:resolved` with the note as its body, in the transaction of the resolve, as it
 * writes an escalation's reason and a rejection's. A resolve without a note writes none: it says
 * nothing new. `actor` keeps who resolved (the task's `state_by` then), since the projector posts
 * later, when the task may have been moved by someone else. Other rows leave it NULL.
 *
 * The trigger is 0015's, recreated with the same name (migrations-keep-objects.test.ts) and its
 * inserts in the same order, so a move writes its labels row before its comment, as PostgreSQL's
 * function does.
 */
const NOW = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

export default {
  version: 52,
  name: 'resolve-note-comment',
  sql: `
ALTER TABLE github_outbox ADD COLUMN actor TEXT CHECK (actor IS NULL OR length(actor) <= 200);
DROP TRIGGER github_outbox_task_state;
CREATE TRIGGER github_outbox_task_state AFTER UPDATE OF state ON tasks
  FOR EACH ROW WHEN NEW.state IS NOT OLD.state AND substr(NEW.key, 1, 7) = 'github:'
BEGIN
  INSERT INTO github_outbox (task_key, kind, cause, created_at)
  SELECT key, 'labels', 'task:' || NEW.state, ${NOW} FROM tasks WHERE id = NEW.id;
  INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
  SELECT NEW.key, 'comment', 'task:escalated', substr(NEW.state_reason, 1, 4000), ${NOW}
  WHERE NEW.state = 'escalated' AND NEW.state_reason IS NOT NULL;
  INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
  SELECT NEW.key, 'comment', 'task:rejected', substr(NEW.feedback, 1, 4000), ${NOW}
  WHERE OLD.state = 'in_review' AND NEW.state = 'open' AND NEW.feedback IS NOT NULL;
  INSERT INTO github_outbox (task_key, kind, cause, body, actor, created_at)
  SELECT NEW.key, 'comment', 'task:resolved', substr(NEW.state_reason, 1, 4000),
         substr(NEW.state_by, 1, 200), ${NOW}
  WHERE OLD.state = 'escalated' AND NEW.state = 'open' AND NEW.state_reason IS NOT NULL;
END;
`,
};
