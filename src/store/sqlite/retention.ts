/**
 * Job retention on SQLite (retention-store.ts): one batch is one `BEGIN IMMEDIATE` that reads the
 * clock, checks the term, picks the batch off `jobs_finished` (oldest finish first, after the
 * previous batch's last job), removes the jobs' output rows, their run tokens
 * and then the jobs (foreign keys are on), counts them in `job_retention` and appends one
 * `jobs:pruned` ledger row. The batch logs its jobs for stats() in `stats_pruned` and sets
 * `stats_retention.quiet` around its delete so the jobs mark stays (migration 0038).
 */
import { TERMINAL_SQL } from '../job-guard.js';
import type { JobPruneParams, JobPruneResult, RetentionStore } from '../retention-store.js';
import { termIsCurrent } from './dispatch.js';
import { fromSync, type SqliteExecutor } from './executor.js';
import { appendAudit } from './rows.js';
import { retentionState, type StateRow } from '../retention-state.js';

/**
 * The jobs a batch may remove: over, finished before @cutoff, not the newest of their task, not
 * named by a workspace lock, and not of the session that still holds the task's claim. The locks'
 * NOT IN list is read once per statement (a few rows).
 */
const CANDIDATES = `FROM jobs j INDEXED BY jobs_finished
  WHERE j.status IN ${TERMINAL_SQL} AND j.finished_at < @cutoff
    AND EXISTS (SELECT 1 FROM jobs newer WHERE newer.task_id = j.task_id AND newer.id > j.id)
    AND j.id NOT IN (SELECT job_id FROM workspace_locks WHERE job_id IS NOT NULL)
    AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = j.task_id
                    AND t.holder_session_id IN (j.session_id, j.agent_session_id))`;

/** The entries of `jobs_finished` after the cursor (a row value the index seeks to) that may go. */
const AFTER = `j.status IN ${TERMINAL_SQL} AND j.finished_at < @cutoff
  AND (j.finished_at, j.id) > (@afterAt, @afterId)`;
/** The last entry a batch may look at: @scan entries on (none: fewer are left, the sweep's end). */
const WINDOW_END = `SELECT j.finished_at, j.id FROM jobs j INDEXED BY jobs_finished WHERE ${AFTER}
  ORDER BY j.finished_at, j.id LIMIT 1 OFFSET @scan - 1`;
/**
 * Between the cursor and the window's end, in the index's order, both row values its range (no
 * cursor: from before any time, not an `IS NULL OR` the planner could not seek by): a batch looks
 * at @scan entries at most, however many of them are kept, and a pass at each once.
 */
export const PICK = `SELECT j.id, j.finished_at ${CANDIDATES} AND (j.finished_at, j.id) > (@afterAt, @afterId)
    AND (j.finished_at, j.id) <= (@endAt, @endId)
  ORDER BY j.finished_at, j.id LIMIT @limit`;
type Position = { finished_at: number; id: number };
const COUNT = `SELECT count(*) AS n ${CANDIDATES}`;
const IDS = 'SELECT value FROM json_each(@ids)';
/**
 * The run tokens of the removed jobs, found through `tokens_by_job`, a probe per job. None can open
 * anything, revoked or not: a run token verifies only while its job is claimed or running (RUN_LIVE,
 * tokens.ts), and a finished job never is again (core/job.ts).
 */
export const DELETE_TOKENS = `DELETE FROM tokens WHERE job_id IN (${IDS})`;
/** Batches stats_pruned keeps: a store that saw fewer counts its jobs again (docs/decisions/0040). */
const LOGGED_BATCHES = 1000;
const QUIET = 'UPDATE stats_retention SET quiet = 1 RETURNING seq + 1 AS seq';
const LOG = `INSERT INTO stats_pruned (seq, status, removed, first_id, last_id)
  SELECT @seq, status, count(*), min(id), max(id) FROM jobs WHERE id IN (${IDS}) GROUP BY status`;
const LOGGED = `UPDATE stats_retention SET quiet = 0, seq = @seq, dropped = max(dropped, @seq - ${LOGGED_BATCHES})`;
const TRIM = `DELETE FROM stats_pruned WHERE seq <= @seq - ${LOGGED_BATCHES}`;
/** Counted by state before they go (job_retention). */
const COUNT_REMOVED = `INSERT INTO job_retention (status, removed, max_id, last_cutoff, last_at)
  SELECT status, count(*), max(id), @cutoff, @now FROM jobs WHERE id IN (${IDS}) GROUP BY status
  ON CONFLICT (status) DO UPDATE SET removed = removed + excluded.removed, max_id = max(max_id, excluded.max_id),
    last_cutoff = excluded.last_cutoff, last_at = excluded.last_at`;

function pruneBatch(exec: SqliteExecutor, params: JobPruneParams): JobPruneResult {
  const now = exec.now();
  if (params.term !== undefined && !termIsCurrent(exec, params.term, now))
    return { ok: false, reason: 'fenced' };
  const cutoff = now - params.olderThanMs;
  if (params.dryRun === true) {
    const { n } = exec.prepare(COUNT).get({ cutoff }) as { n: number };
    return { ok: true, removed: n, cutoff, last: null };
  }
  const { after, limit } = params;
  const from = { cutoff, afterAt: after?.finishedAt ?? Number.MIN_SAFE_INTEGER, afterId: after?.id ?? 0 };
  const end = exec.prepare(WINDOW_END).get({ ...from, scan: params.scan ?? limit * 10 }) as
    Position | undefined;
  const to = {
    endAt: end?.finished_at ?? Number.MAX_SAFE_INTEGER,
    endId: end?.id ?? Number.MAX_SAFE_INTEGER,
  };
  // The window's end as the range's upper bound too: SQLite seeks by one upper bound, the cutoff's
  // (below the end's ms + 1, the end's row value then cuts within that ms).
  const upTo = end === undefined ? cutoff : Math.min(cutoff, end.finished_at + 1);
  const picked = exec.prepare(PICK).all({ ...from, cutoff: upTo, ...to, limit }) as Position[];
  const lastRow = picked.at(-1);
  // Where the next batch goes on: after the last removed when the limit cut the window, else past it.
  const stop = picked.length === limit ? lastRow : end;
  const last = stop === undefined ? null : { finishedAt: stop.finished_at, id: stop.id };
  if (lastRow === undefined) return { ok: true, removed: 0, cutoff, last };
  const ids = picked.map((row) => row.id);
  const list = JSON.stringify(ids);
  exec.prepare(COUNT_REMOVED).run({ ids: list, cutoff, now });
  const { seq } = exec.prepare(QUIET).get() as { seq: number };
  exec.prepare(LOG).run({ ids: list, seq });
  exec.prepare(`DELETE FROM output_chunks WHERE job_id IN (${IDS})`).run({ ids: list });
  const tokens = exec.prepare(DELETE_TOKENS).run({ ids: list }).changes;
  const removed = exec.prepare(`DELETE FROM jobs WHERE id IN (${IDS})`).run({ ids: list }).changes;
  exec.prepare(TRIM).run({ seq });
  exec.prepare(LOGGED).run({ seq });
  const maxId = Math.max(...ids);
  appendAudit(exec, {
    at: now,
    type: 'jobs:pruned',
    detail: {
      removed,
      cutoff,
      firstId: Math.min(...ids),
      lastId: maxId,
      tokens,
      ...(params.by === undefined ? {} : { by: params.by }),
    },
  });
  return { ok: true, removed, cutoff, last };
}

export function sqliteRetention(exec: SqliteExecutor): RetentionStore['retention'] {
  return fromSync<RetentionStore['retention']>({
    pruneJobs: (params) =>
      params.dryRun === true
        ? exec.read(() => pruneBatch(exec, params))
        : exec.write(() => pruneBatch(exec, params)),
    state: () =>
      exec.read(() =>
        retentionState(
          exec
            .prepare('SELECT status, removed, max_id, last_cutoff, last_at FROM job_retention')
            .all() as StateRow[],
        ),
      ),
  });
}
