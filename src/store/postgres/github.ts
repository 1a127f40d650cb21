/**
 * The GitHub backlog's outbox, cursors and ETag cache on PostgreSQL (github-store.ts), in four
 * parts: the outbox the label projector drains, its upkeep (retention, rows no sync applies), the
 * labels' state it reads and the repairs and notes it records, and what the sync keeps between runs.
 */
import type { GithubStore, LabelState, OutboxRow } from '../github-store.js';
import { ACTIVE_SQL } from '../job-guard.js';
import { outboxRowOf, type OutboxColumns } from '../run-rows.js';
import { NOW, PG, msInterval, msOf, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';

type Row = OutboxColumns<PgEncoding>;
const toRow = (row: Row): OutboxRow => outboxRowOf(PG, row);

const AUDIT = `INSERT INTO audit_events (at, type, task_key, job_id, detail)
  VALUES (${NOW}, $1::text, $2::text, $3::bigint, $4::jsonb)`;

type Github = GithubStore['github'];

/** The outbox: rows due, marked applied or failed, and the count still waiting. */
function outbox(exec: PgExecutor): Pick<Github, 'pending' | 'applied' | 'failed' | 'backlog'> {
  return {
    pending: async ({ limit, key, prefix }) =>
      (key !== undefined
        ? await exec.rows<Row>(
            `SELECT * FROM github_outbox WHERE task_key = $1::text AND applied_at IS NULL
               ORDER BY id LIMIT $2::int`,
            [key, limit],
          )
        : await exec.rows<Row>(
            `SELECT * FROM github_outbox o
           WHERE o.applied_at IS NULL AND o.retry_at <= ${NOW}
             AND left(o.task_key, length($2::text)) = $2::text
             AND NOT EXISTS (SELECT 1 FROM github_outbox e
               WHERE e.task_key = o.task_key AND e.id < o.id AND e.applied_at IS NULL
                 AND e.retry_at > ${NOW})
           ORDER BY o.id LIMIT $1::int`,
            [limit, prefix ?? ''],
          )
      ).map(toRow),
    applied: async (ids) => {
      await exec.rows(
        `UPDATE github_outbox SET applied_at = ${NOW} WHERE id = ANY($1::bigint[]) AND applied_at IS NULL`,
        [ids],
      );
    },
    failed: async (params) => {
      await exec.rows(
        `UPDATE github_outbox SET attempts = attempts + 1, retry_at = ${NOW} + ${msInterval('$2')},
           last_error = left($3::text, 500)
         WHERE id = ANY($1::bigint[]) AND applied_at IS NULL`,
        [params.ids, params.retryAfterMs, params.error],
      );
    },
    backlog: async () =>
      Number(
        (await exec.one<{ n: string }>('SELECT count(*) AS n FROM github_outbox WHERE applied_at IS NULL'))
          ?.n ?? 0,
      ),
  };
}

/**
 * The outbox's upkeep: applied rows removed past the retention, and the pending rows of repositories
 * no sync has run for (decision 0013, "Retention of applied rows"; "Keys no sync applies").
 */
function upkeep(exec: PgExecutor): Pick<Github, 'prune' | 'unsynced'> {
  return {
    prune: async ({ olderThanMs, limit }) => {
      // SKIP LOCKED: a row the projector is marking applied right now is left for the next pass.
      const row = await exec.one<{ removed: number; cutoff: string }>(
        `WITH n AS (SELECT ${NOW} - ${msInterval('$1')} AS cutoff),
         d AS (DELETE FROM github_outbox WHERE id IN (SELECT o.id FROM github_outbox o, n
           WHERE o.applied_at IS NOT NULL AND o.applied_at < n.cutoff
           ORDER BY o.id LIMIT $2::int FOR UPDATE OF o SKIP LOCKED) RETURNING 1)
         SELECT (SELECT count(*)::int FROM d) AS removed, ${msOf('n.cutoff')} AS cutoff FROM n`,
        [olderThanMs, limit],
      );
      return { removed: row?.removed ?? 0, cutoff: Number(row?.cutoff ?? 0) };
    },
    unsynced: async () =>
      (
        await exec.rows<{ repo: string; rows: number; oldest_at: string }>(
          `SELECT repo, count(*)::int AS rows, ${msOf('min(created_at)')} AS oldest_at FROM (
             SELECT substr(task_key, 8, strpos(task_key, '#') - 8) AS repo, created_at
             FROM github_outbox WHERE applied_at IS NULL AND strpos(task_key, '#') > 8) o
           WHERE NOT EXISTS (SELECT 1 FROM github_sync s
             WHERE s.repo = o.repo OR left(s.repo, length(o.repo) + 8) = o.repo || ' labels:')
           GROUP BY repo ORDER BY repo COLLATE "C"`,
        )
      ).map((row) => ({ repo: row.repo, rows: row.rows, oldestAt: Number(row.oldest_at) })),
  };
}

/** The labels' state the projector reads, and what it records: a repair, a note in the ledger. */
function labels(exec: PgExecutor): Pick<Github, 'labelStates' | 'repair' | 'note'> {
  return {
    labelStates: async (keys) =>
      (
        await exec.rows<{
          key: string;
          state: LabelState['state'];
          held: boolean;
          job_status: LabelState['jobStatus'];
        }>(
          `SELECT t.key, t.state, t.holder_session_id IS NOT NULL AS held,
             (SELECT j.status FROM jobs j WHERE j.task_id = t.id
               AND j.status IN ${ACTIVE_SQL}) AS job_status
           FROM tasks t WHERE t.key = ANY($1::text[]) ORDER BY t.key`,
          [keys],
        )
      ).map((row) => ({ key: row.key, state: row.state, held: row.held, jobStatus: row.job_status })),
    repair: async (params) => {
      await exec.rows(
        `WITH o AS (
           INSERT INTO github_outbox (task_key, kind, cause, created_at)
           VALUES ($2::text, 'labels', 'repair', ${NOW})
         ) ${AUDIT}`,
        ['github:label-repaired', params.key, null, JSON.stringify(params.detail)],
      );
    },
    note: async (params) => {
      await exec.rows(AUDIT, [params.type, params.key, params.jobId ?? null, JSON.stringify(params.detail)]);
    },
  };
}

/** What the sync keeps between runs: each repository's cursor and the ETag cache. */
function syncState(exec: PgExecutor): Pick<Github, 'cursor' | 'saveCursor' | 'cached' | 'cache'> {
  return {
    cursor: async (repo) =>
      (
        await exec.one<{ since: string | null }>('SELECT since FROM github_sync WHERE repo = $1::text', [
          repo,
        ])
      )?.since ?? null,
    saveCursor: async (params) => {
      await exec.rows(
        `INSERT INTO github_sync (repo, since, synced_at) VALUES ($1::text, $2::text, ${NOW})
         ON CONFLICT (repo) DO UPDATE SET since = excluded.since, synced_at = excluded.synced_at`,
        [params.repo, params.since],
      );
    },
    cached: async (url) =>
      (await exec.one<{ etag: string; body: string }>(
        'SELECT etag, body FROM github_cache WHERE url = $1::text',
        [url],
      )) ?? null,
    cache: async (params) => {
      await exec.rows(
        `INSERT INTO github_cache (url, etag, body, stored_at) VALUES ($1::text, $2::text, $3::text, ${NOW})
         ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, body = excluded.body,
           stored_at = excluded.stored_at`,
        [params.url, params.etag, params.body],
      );
    },
  };
}

export function postgresGithub(exec: PgExecutor): Github {
  return { ...outbox(exec), ...upkeep(exec), ...labels(exec), ...syncState(exec) };
}
