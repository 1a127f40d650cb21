/**
 * The GitHub backlog's outbox, cursors and ETag cache on SQLite (github-store.ts), in four
 * parts: the outbox the label projector drains, its upkeep (retention, rows no sync applies), the
 * labels' state it reads and the repairs and notes it records, and what the sync keeps between runs.
 */
import type { GithubStore, LabelState, OutboxRow } from '../github-store.js';
import { ACTIVE_SQL } from '../job-guard.js';
import { outboxRowOf, type OutboxColumns } from '../run-rows.js';
import { SQLITE, appendAudit, type SqliteEncoding } from './rows.js';
import { fromSync, type SqliteExecutor, type Sync } from './executor.js';

type Github = GithubStore['github'];

type Row = OutboxColumns<SqliteEncoding>;
const toRow = (row: Row): OutboxRow => outboxRowOf(SQLITE, row);

const ids = (list: readonly number[]): string => JSON.stringify(list);

/** The outbox: rows due, marked applied or failed, and the count still waiting. */
function outbox(exec: SqliteExecutor): Sync<Pick<Github, 'pending' | 'applied' | 'failed' | 'backlog'>> {
  return {
    pending: ({ limit, key, prefix }) =>
      exec.read(() =>
        (
          (key !== undefined
            ? exec.prepare(
                `SELECT * FROM github_outbox WHERE task_key = @key AND applied_at IS NULL
                 ORDER BY id LIMIT @limit`,
              )
            : exec.prepare(
                `SELECT * FROM github_outbox o
               WHERE o.applied_at IS NULL AND o.retry_at <= @now
                 AND substr(o.task_key, 1, length(@prefix)) = @prefix
                 AND NOT EXISTS (SELECT 1 FROM github_outbox e
                   WHERE e.task_key = o.task_key AND e.id < o.id AND e.applied_at IS NULL
                     AND e.retry_at > @now)
               ORDER BY o.id LIMIT @limit`,
              )
          ).all(
            key !== undefined ? { key, limit } : { now: exec.now(), limit, prefix: prefix ?? '' },
          ) as Row[]
        ).map(toRow),
      ),
    applied: (list) =>
      exec.write(() => {
        exec
          .prepare(
            `UPDATE github_outbox SET applied_at = ?
             WHERE id IN (SELECT value FROM json_each(?)) AND applied_at IS NULL`,
          )
          .run(exec.now(), ids(list));
      }),
    failed: (params) =>
      exec.write(() => {
        const now = exec.now();
        exec
          .prepare(
            `UPDATE github_outbox SET attempts = attempts + 1, retry_at = ?, last_error = substr(?, 1, 500)
             WHERE id IN (SELECT value FROM json_each(?)) AND applied_at IS NULL`,
          )
          .run(now + params.retryAfterMs, params.error, ids(params.ids));
      }),
    backlog: () =>
      exec.read(
        () =>
          (
            exec.prepare('SELECT count(*) AS n FROM github_outbox WHERE applied_at IS NULL').get() as {
              n: number;
            }
          ).n,
      ),
  };
}

/**
 * The outbox's upkeep: applied rows removed past the retention, and the pending rows of repositories
 * no sync has run for (decision 0013, "Retention of applied rows"; "Keys no sync applies").
 */
function upkeep(exec: SqliteExecutor): Sync<Pick<Github, 'prune' | 'unsynced'>> {
  return {
    prune: ({ olderThanMs, limit }) =>
      exec.write(() => {
        const cutoff = exec.now() - olderThanMs;
        // By id, the primary key: rows are applied roughly in id order, so the oldest applied ones
        // are at the head; an index on applied_at would cost every projector write for a pass
        // made every ten minutes over a table retention keeps small.
        const { changes } = exec
          .prepare(
            `DELETE FROM github_outbox WHERE id IN (SELECT id FROM github_outbox
               WHERE applied_at IS NOT NULL AND applied_at < ? ORDER BY id LIMIT ?)`,
          )
          .run(cutoff, limit);
        return { removed: changes, cutoff };
      }),
    unsynced: () =>
      exec.read(() =>
        (
          exec
            .prepare(
              `SELECT repo, count(*) AS rows, min(created_at) AS oldest_at FROM (
                 SELECT substr(task_key, 8, instr(task_key, '#') - 8) AS repo, created_at
                 FROM github_outbox WHERE applied_at IS NULL AND instr(task_key, '#') > 8) o
               WHERE NOT EXISTS (SELECT 1 FROM github_sync s
                 WHERE s.repo = o.repo OR substr(s.repo, 1, length(o.repo) + 8) = o.repo || ' labels:')
               GROUP BY repo ORDER BY repo`,
            )
            .all() as { repo: string; rows: number; oldest_at: number }[]
        ).map((row) => ({ repo: row.repo, rows: row.rows, oldestAt: row.oldest_at })),
      ),
  };
}

/** The labels' state the projector reads, and what it records: a repair, a note in the ledger. */
function labels(exec: SqliteExecutor): Sync<Pick<Github, 'labelStates' | 'repair' | 'note'>> {
  return {
    labelStates: (keys) =>
      exec.read(() =>
        (
          exec
            .prepare(
              `SELECT t.key, t.state, t.holder_session_id IS NOT NULL AS held,
                 (SELECT j.status FROM jobs j WHERE j.task_id = t.id
                   AND j.status IN ${ACTIVE_SQL}) AS job_status
               FROM tasks t WHERE t.key IN (SELECT value FROM json_each(?)) ORDER BY t.key`,
            )
            .all(JSON.stringify(keys)) as {
            key: string;
            state: LabelState['state'];
            held: number;
            job_status: LabelState['jobStatus'];
          }[]
        ).map((row) => ({ key: row.key, state: row.state, held: row.held === 1, jobStatus: row.job_status })),
      ),
    repair: (params) =>
      exec.write(() => {
        const now = exec.now();
        exec
          .prepare(
            `INSERT INTO github_outbox (task_key, kind, cause, created_at) VALUES (?, 'labels', 'repair', ?)`,
          )
          .run(params.key, now);
        appendAudit(exec, { at: now, type: 'github:label-repaired', key: params.key, detail: params.detail });
      }),
    note: (params) =>
      exec.write(() => {
        appendAudit(exec, {
          at: exec.now(),
          type: params.type,
          key: params.key,
          jobId: params.jobId ?? null,
          detail: params.detail,
        });
      }),
  };
}

/** What the sync keeps between runs: each repository's cursor and the ETag cache. */
function syncState(exec: SqliteExecutor): Sync<Pick<Github, 'cursor' | 'saveCursor' | 'cached' | 'cache'>> {
  return {
    cursor: (repo) =>
      exec.read(() => {
        const row = exec.prepare('SELECT since FROM github_sync WHERE repo = ?').get(repo) as
          { since: string | null } | undefined;
        return row?.since ?? null;
      }),
    saveCursor: (params) =>
      exec.write(() => {
        exec
          .prepare(
            `INSERT INTO github_sync (repo, since, synced_at) VALUES (?, ?, ?)
             ON CONFLICT (repo) DO UPDATE SET since = excluded.since, synced_at = excluded.synced_at`,
          )
          .run(params.repo, params.since, exec.now());
      }),
    cached: (url) =>
      exec.read(
        () =>
          (exec.prepare('SELECT etag, body FROM github_cache WHERE url = ?').get(url) as
            { etag: string; body: string } | undefined) ?? null,
      ),
    cache: (params) =>
      exec.write(() => {
        exec
          .prepare(
            `INSERT INTO github_cache (url, etag, body, stored_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, body = excluded.body,
               stored_at = excluded.stored_at`,
          )
          .run(params.url, params.etag, params.body, exec.now());
      }),
  };
}

export function sqliteGithub(exec: SqliteExecutor): Github {
  return fromSync<Github>({ ...outbox(exec), ...upkeep(exec), ...labels(exec), ...syncState(exec) });
}
