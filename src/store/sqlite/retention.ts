/**
 * Job retention on SQLite (retention-store.ts): one batch is one `BEGIN IMMEDIATE` that reads the
 * clock, checks the term, picks the batch off `jobs_finished` (oldest finish first), removes the
 * jobs' output rows and then the jobs (foreign keys are on), counts them in `job_retention` and
 * appends one `jobs:pruned` ledger row. The batch logs its jobs for stats() in `stats_pruned` and
 * sets `stats_retention.quiet` around its delete so the jobs mark stays (migration 0038).
 */
import { TERMINAL_SQL } from '../job-guard.js';
import type { JobPruneParams, JobPruneResult, RetentionStore } from '../retention-store.js';
import { termIsCurrent } from './dispatch.js';
import { fromSync, type SqliteExecutor } from './executor.js';
import { appendAudit } from './rows.js';
import { retentionState, type StateRow } from '../retention-state.js';

/**
 * The jobs a batch may remove: over, finished before @cutoff, not the newest of their task, not
 * named by a workspace lock or an unrevoked, unexpired run token, and not of the session that
 * still holds the task's claim. The two NOT IN lists are read once per statement.
 */
const CANDIDATES = `FROM jobs j INDEXED BY jobs_finished
  WHERE j.status IN ${TERMINAL_SQL} AND j.finished_at < @cutoff
    AND EXISTS (SELECT 1 FROM jobs newer WHERE newer.task_id = j.task_id AND newer.id > j.id)
    AND j.id NOT IN (SELECT job_id FROM workspace_locks WHERE job_id IS NOT NULL)
    AND j.id NOT IN (SELECT job_id FROM tokens WHERE job_id IS NOT NULL AND revoked_at IS NULL
                     AND (expires_at IS NULL OR expires_at > @now))
    AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = j.task_id
                    AND t.holder_session_id IN (j.session_id, j.agent_session_id))`;

const PICK = `SELECT j.id ${CANDIDATES} ORDER BY j.finished_at, j.id LIMIT @limit`;
const COUNT = `SELECT count(*) AS n ${CANDIDATES}`;
const IDS = 'SELECT value FROM json_each(@ids)';
/** Counted by state before they go (job_retention). */
const COUNT_REMOVED = `INSERT INTO job_retention (status, removed, max_id, last_cutoff, last_at)
  SELECT status, count(*), max(id), @cutoff, @now FROM jobs WHERE id IN (${IDS}) GROUP BY status
  ON CONFLICT (status) DO UPDATE SET removed = removed + excluded.removed, max_id = max(max_id, excluded.max_id),
    last_cutoff = excluded.last_cutoff, last_at = excluded.last_at`;

/** Batches stats_pruned keeps: a store that saw fewer counts its jobs again (docs/decisions/0040). */
const LOGGED_BATCHES = 1000;
const QUIET = 'UPDATE stats_retention SET quiet = 1 RETURNING seq + 1 AS seq';
const LOG = `INSERT INTO stats_pruned (seq, status, removed, first_id, last_id)
  SELECT @seq, status, count(*), min(id), max(id) FROM jobs WHERE id IN (${IDS}) GROUP BY status`;
const LOGGED = `UPDATE stats_retention SET quiet = 0, seq = @seq, dropped = max(dropped, @seq - ${LOGGED_BATCHES})`;
const TRIM = `DELETE FROM stats_pruned WHERE seq <= @seq - ${LOGGED_BATCHES}`;

function pruneBatch(exec: SqliteExecutor, params: JobPruneParams): JobPruneResult {
  const now = exec.now();
  if (params.term !== undefined && !termIsCurrent(exec, params.term, now))
    return { ok: false, reason: 'fenced' };
  const cutoff = now - params.olderThanMs;
  if (params.dryRun === true) {
    const { n } = exec.prepare(COUNT).get({ cutoff, now }) as { n: number };
    return { ok: true, removed: n, cutoff };
  }
  const ids = exec.prepare(PICK).pluck().all({ cutoff, now, limit: params.limit }) as number[];
  if (ids.length === 0) return { ok: true, removed: 0, cutoff };
  const list = JSON.stringify(ids);
  exec.prepare(COUNT_REMOVED).run({ ids: list, cutoff, now });
  const { seq } = exec.prepare(QUIET).get() as { seq: number };
  exec.prepare(LOG).run({ ids: list, seq });
  exec.prepare(`DELETE FROM output_chunks WHERE job_id IN (${IDS})`).run({ ids: list });
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
      ...(params.by === undefined ? {} : { by: params.by }),
    },
  });
  return { ok: true, removed, cutoff };
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
