/**
 * The GitHub backlog (docs/decisions/0013-github-backlog.md):
 * - `github_outbox`: what GitHub must be told, written by triggers in the same transaction as the
 *   change that makes it necessary: a `labels` row whenever a github: task's job is added or
 *   changes status, its claim is granted or released, or its state changes; a `comment` row
 *   with an escalation's reason or a review rejection's. The projector (src/github/projector.ts)
 *   applies them, oldest first per issue, and marks them applied. Triggers, not store code, so
 *   that no path that changes a task (a batch, a rescue, a migration) can forget its row.
 * - `github_sync`: each repository's sync cursor (the newest `updated_at` fully imported).
 * - `github_cache`: ETags and bodies of GitHub responses, for conditional requests.
 * Later migrations that rebuild `jobs` or `tasks` must recreate these triggers
 * (migrations-keep-objects.test.ts checks it).
 */
const NOW = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
const GITHUB_TASK = (id: string): string =>
  `(SELECT substr(key, 1, 7) FROM tasks WHERE id = ${id}) = 'github:'`;
const LABELS_ROW = (id: string, cause: string): string =>
  `INSERT INTO github_outbox (task_key, kind, cause, created_at)
   SELECT key, 'labels', ${cause}, ${NOW} FROM tasks WHERE id = ${id};`;

export default {
  version: 15,
  name: 'github',
  sql: `
CREATE TABLE github_outbox (
  id INTEGER PRIMARY KEY,
  task_key TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('labels', 'comment')),
  cause TEXT NOT NULL,
  body TEXT CHECK (body IS NULL OR length(body) <= 4000),
  created_at INTEGER NOT NULL,
  applied_at INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  retry_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT CHECK (last_error IS NULL OR length(last_error) <= 500)
);
CREATE INDEX github_outbox_pending ON github_outbox (id) WHERE applied_at IS NULL;
CREATE INDEX github_outbox_by_key ON github_outbox (task_key, id);
CREATE TABLE github_sync (
  repo TEXT PRIMARY KEY,
  since TEXT,
  synced_at INTEGER NOT NULL
);
CREATE TABLE github_cache (
  url TEXT PRIMARY KEY,
  etag TEXT NOT NULL,
  body TEXT NOT NULL,
  stored_at INTEGER NOT NULL
);
CREATE TRIGGER github_outbox_job_insert AFTER INSERT ON jobs
  FOR EACH ROW WHEN ${GITHUB_TASK('NEW.task_id')}
BEGIN
  ${LABELS_ROW('NEW.task_id', "'job:' || NEW.status")}
END;
CREATE TRIGGER github_outbox_job_status AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN NEW.status IS NOT OLD.status AND ${GITHUB_TASK('NEW.task_id')}
BEGIN
  ${LABELS_ROW('NEW.task_id', "'job:' || NEW.status")}
END;
CREATE TRIGGER github_outbox_task_insert AFTER INSERT ON tasks
  FOR EACH ROW WHEN substr(NEW.key, 1, 7) = 'github:'
BEGIN
  ${LABELS_ROW('NEW.id', "'task:' || NEW.state")}
  INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
  SELECT NEW.key, 'comment', 'task:escalated', substr(NEW.state_reason, 1, 4000), ${NOW}
  WHERE NEW.state = 'escalated' AND NEW.state_reason IS NOT NULL;
END;
CREATE TRIGGER github_outbox_task_holder AFTER UPDATE OF holder_session_id ON tasks
  FOR EACH ROW WHEN NEW.holder_session_id IS NOT OLD.holder_session_id
    AND substr(NEW.key, 1, 7) = 'github:'
BEGIN
  ${LABELS_ROW('NEW.id', "CASE WHEN NEW.holder_session_id IS NULL THEN 'claim:released' ELSE 'claim:granted' END")}
END;
CREATE TRIGGER github_outbox_task_state AFTER UPDATE OF state ON tasks
  FOR EACH ROW WHEN NEW.state IS NOT OLD.state AND substr(NEW.key, 1, 7) = 'github:'
BEGIN
  ${LABELS_ROW('NEW.id', "'task:' || NEW.state")}
  INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
  SELECT NEW.key, 'comment', 'task:escalated', substr(NEW.state_reason, 1, 4000), ${NOW}
  WHERE NEW.state = 'escalated' AND NEW.state_reason IS NOT NULL;
  INSERT INTO github_outbox (task_key, kind, cause, body, created_at)
  SELECT NEW.key, 'comment', 'task:rejected', substr(NEW.feedback, 1, 4000), ${NOW}
  WHERE OLD.state = 'in_review' AND NEW.state = 'open' AND NEW.feedback IS NOT NULL;
END;
`,
};
