/**
 * progress.markTimedOut on SQLite (progress-store.ts): a running job's time limit judged against
 * its `started_at` on the database clock (exec.now()), by a read first, so a run within its limit
 * takes no write lock; the verdict past it is taken again in the write, with its ledger row.
 */
import type {
  TimedOutBy,
  TimeLimitParams,
  TimeLimitResult,
  TimedOutFinishResult,
} from '../progress-store.js';
import type { JobFinishParams } from '../store.js';
import { timedOutReason } from '../time-limit-reason.js';
import { appendAudit } from './rows.js';
import type { SqliteExecutor } from './executor.js';
import { finishIn } from './job-steps.js';

interface LimitRow {
  job_id: number;
  key: string;
  epoch: number;
  started_at: number;
  time_limit_ms: number | null;
  already: number;
}

/** The run, when it is this (session, epoch)'s and its lease (a batch's), if any, holds at `now`. */
function limitRow(exec: SqliteExecutor, params: TimeLimitParams, now: number): LimitRow | undefined {
  return exec
    .prepare(
      `SELECT j.id AS job_id, t.key, j.epoch, j.started_at, j.time_limit_ms,
         EXISTS (SELECT 1 FROM audit_events a WHERE a.task_key = t.key AND a.job_id = j.id
           AND a.type = 'job:timed_out' AND a.epoch = j.epoch) AS already
         FROM jobs j JOIN tasks t ON t.id = j.task_id
         WHERE j.id = ? AND j.session_id = ? AND j.epoch = ? AND j.status = 'running'
           AND j.started_at IS NOT NULL AND (j.lease_until IS NULL OR j.lease_until > ?)`,
    )
    .get(params.id, params.session, params.epoch, now) as LimitRow | undefined;
}

function judge(row: LimitRow | undefined, now: number, defaultLimitMs: number | null): TimeLimitResult {
  if (row === undefined) return { timedOut: false, reason: 'lost' };
  const limitMs = row.time_limit_ms ?? defaultLimitMs;
  if (limitMs === null) return { timedOut: false, reason: 'none' };
  if (now - row.started_at < limitMs) return { timedOut: false, reason: 'within' };
  return { timedOut: true, startedAt: row.started_at, limitMs, first: row.already === 0 };
}

export function markTimedOut(exec: SqliteExecutor, params: TimeLimitParams): TimeLimitResult {
  const first = exec.read(() => {
    const now = exec.now();
    return judge(limitRow(exec, params, now), now, params.defaultLimitMs);
  });
  if (!first.timedOut || !first.first) return first;
  return exec.write(() => judgeAndAudit(exec, params, exec.now(), { by: 'runner' }));
}

/** A pull worker's finish (single or batch) judged the run: its `job:timed_out` row says so. */
const BY_FINISH: TimedOutBy = { by: 'finish' };

/**
 * The verdict taken again inside the caller's write, and its first `job:timed_out` row written,
 * saying who judged it (`by`).
 */
export function judgeAndAudit(
  exec: SqliteExecutor,
  params: TimeLimitParams,
  now: number,
  by: TimedOutBy,
): TimeLimitResult {
  const row = limitRow(exec, params, now);
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
      ...by,
    },
  });
  return verdict;
}

/** Thrown inside the write to roll it back: the failing finish did not match. */
class FinishLost extends Error {}

/**
 * progress.failTimedOut: a read first (a run within its own limit takes no write lock), then, past
 * it, the verdict, its ledger row and the failing finish in one write; a finish that does not match
 * rolls the write back.
 */
export function failTimedOut(exec: SqliteExecutor, params: JobFinishParams): TimedOutFinishResult {
  const own = { id: params.id, session: params.session, epoch: params.epoch, defaultLimitMs: null };
  const read = exec.read(() => {
    const now = exec.now();
    return judge(limitRow(exec, own, now), now, null);
  });
  if (!read.timedOut) return read;
  try {
    return exec.write((): TimedOutFinishResult => {
      const verdict = failIn(exec, params, exec.now());
      if (verdict.timedOut && !verdict.finished.ok) throw new FinishLost();
      return verdict;
    });
  } catch (error) {
    if (error instanceof FinishLost) return { timedOut: false, reason: 'lost' };
    throw error;
  }
}

/**
 * Inside the caller's write: a running job past its own limit at `now` audited (once per epoch) and
 * failed timed out, the worker's word kept in the reason; otherwise nothing written. A batch's
 * members go through it one by one (batchIn), so one member past its limit fails alone.
 */
export function failIn(exec: SqliteExecutor, params: JobFinishParams, now: number): TimedOutFinishResult {
  const own = { id: params.id, session: params.session, epoch: params.epoch, defaultLimitMs: null };
  const verdict = judgeAndAudit(exec, own, now, BY_FINISH);
  if (!verdict.timedOut) return verdict;
  const reason = timedOutReason(verdict.startedAt, verdict.limitMs, params);
  return { ...verdict, finished: finishIn(exec, { ...params, status: 'failed', reason }, now) };
}
