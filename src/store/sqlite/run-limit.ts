/**
 * progress.markTimedOut on SQLite (progress-store.ts): a running job's time limit judged against
 * its `started_at` on the database clock (exec.now()), by a read first, so a run within its limit
 * takes no write lock; the verdict past it is taken again in the write, with its ledger row.
 */
import type { TimeLimitParams, TimeLimitResult } from '../progress-store.js';
import { appendAudit } from './rows.js';
import type { SqliteExecutor } from './executor.js';

interface LimitRow {
  job_id: number;
  key: string;
  epoch: number;
  started_at: number;
  time_limit_ms: number | null;
  already: number;
}

function limitRow(exec: SqliteExecutor, params: TimeLimitParams): LimitRow | undefined {
  return exec
    .prepare(
      `SELECT j.id AS job_id, t.key, j.epoch, j.started_at, j.time_limit_ms,
         EXISTS (SELECT 1 FROM audit_events a WHERE a.task_key = t.key AND a.job_id = j.id
           AND a.type = 'job:timed_out' AND a.epoch = j.epoch) AS already
         FROM jobs j JOIN tasks t ON t.id = j.task_id
         WHERE j.id = ? AND j.session_id = ? AND j.epoch = ? AND j.status = 'running'
           AND j.started_at IS NOT NULL`,
    )
    .get(params.id, params.session, params.epoch) as LimitRow | undefined;
}

function judge(row: LimitRow | undefined, now: number, defaultLimitMs: number | null): TimeLimitResult {
  if (row === undefined) return { timedOut: false, reason: 'lost' };
  const limitMs = row.time_limit_ms ?? defaultLimitMs;
  if (limitMs === null) return { timedOut: false, reason: 'none' };
  if (now - row.started_at < limitMs) return { timedOut: false, reason: 'within' };
  return { timedOut: true, startedAt: row.started_at, limitMs, first: row.already === 0 };
}

export function markTimedOut(exec: SqliteExecutor, params: TimeLimitParams): TimeLimitResult {
  const first = exec.read(() => judge(limitRow(exec, params), exec.now(), params.defaultLimitMs));
  if (!first.timedOut || !first.first) return first;
  return exec.write((): TimeLimitResult => {
    const now = exec.now();
    const row = limitRow(exec, params);
    const verdict = judge(row, now, params.defaultLimitMs);
    if (!verdict.timedOut || !verdict.first || row === undefined) return verdict;
    appendAudit(exec, {
      at: now,
      type: 'job:timed_out',
      key: row.key,
      jobId: row.job_id,
      session: params.session,
      epoch: row.epoch,
      detail: {
        startedAt: verdict.startedAt,
        limitMs: verdict.limitMs,
        own: row.time_limit_ms !== null,
        ranMs: now - row.started_at,
      },
    });
    return verdict;
  });
}
