/**
 * GitHub issue keys in one spelling (docs/decisions/0013, amendment "one issue, one key"): GitHub's
 * owner and repository names are case-insensitive, and a task key now names its repository in lower
 * case (`github:acme/api#7`, whatever the spelling given: core/github.ts issueKey, validateKey).
 * A task stored under another spelling (`github:Acme/API#7`) is renamed to it, with its waiting
 * outbox rows, unless another task has the same key in lower case: such a pair is two tasks for
 * one issue already, left as they are for a person to settle (the lower-case one is the one every
 * command now reaches). A sync cursor is renamed likewise. Claims, jobs and dependencies refer to
 * the task by id; the ledger keeps the spelling its rows were written with.
 *
 * Which keys: those core/github.ts parseIssueKey reads as an issue's (the same rule as SQLite's 0050).
 */
const ISSUE_KEY = `'^github:[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}#[1-9][0-9]{0,9}$'`;

const issueKey = (col: string): string => `(${col} ~ ${ISSUE_KEY}
  AND split_part(split_part(${col}, '/', 2), '#', 1) NOT IN ('.', '..')
  AND ${col} <> lower(${col}))`;

/**
 * No other task whose key is this one's in lower case (or another spelling of it): no two tasks
 * share its lower case, and none is keyed by it. Both read once or by the key's unique index, not
 * per row over every github: task (a correlated lower() scan was quadratic in a large backlog).
 */
const alone = (col: string): string =>
  `lower(${col}) NOT IN (SELECT lower(key) FROM tasks WHERE key >= 'github:' AND key < 'github;'
                          GROUP BY lower(key) HAVING count(*) > 1)
   AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.key = lower(${col}) AND o.key <> ${col})`;

export default {
  version: 50,
  name: 'github-keys-lower-case',
  sql: `
UPDATE github_outbox SET task_key = lower(task_key)
 WHERE ${issueKey('github_outbox.task_key')} AND ${alone('github_outbox.task_key')};
UPDATE tasks SET key = lower(key) WHERE ${issueKey('tasks.key')} AND ${alone('tasks.key')};
UPDATE github_sync SET repo = lower(repo)
 WHERE repo <> lower(repo)
   AND NOT EXISTS (SELECT 1 FROM github_sync o
                    WHERE lower(o.repo) = lower(github_sync.repo) AND o.repo <> github_sync.repo);
`,
};
