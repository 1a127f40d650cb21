/**
 * The steps a worker repeats on SQLite, each inside its caller's BEGIN IMMEDIATE: the claim of
 * due jobs (the claim transition's one home on this engine), the guarded finish of one job, the
 * give-back of jobs whose lease has passed, and jobs.batch, which runs the last three for a whole
 * batch in one transaction (docs/decisions/0017). The single writer makes each select-and-update
 * atomic; the guards are kept anyway.
 */
import { assert } from '../../core/assert.js';
import { NotFoundError } from '../../core/errors.js';
import type { TaskMove } from '../../core/audit-event.js';
import type { Job, JobTransitionResult } from '../../core/job.js';
import { HELD_SQL, finishGuard } from '../job-guard.js';
import { LEASE_EXPIRED } from '../rescue.js';
import { claimSet, jobTaskOpen } from './claim-set.js';
import type { JobFinishParams } from '../store.js';
import type { JobBatchMember, JobBatchParams, JobBatchResult } from '../job-batch.js';
import { releaseJobLocks } from './locks.js';
import { appendAudit, toJob, type JobRow, type SessionRow, type TaskRow } from './rows.js';
import type { SqliteExecutor } from './executor.js';
import { sessionRow } from './tasks-claims.js';
import { moveTask } from './task-state.js';
import { failIn } from './run-limit.js';

const CLAIM_DUE_SET = claimSet({
  status: '@status',
  session: '@session',
  host: '@host',
  now: '@now',
  startedAt: '@startedAt',
  lease: '@lease',
});

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';
export const RETURNING = 'RETURNING *, (SELECT key FROM tasks WHERE id = jobs.task_id) AS key';

export function jobById(exec: SqliteExecutor, id: number): Job | null {
  const row = exec.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(id) as JobRow | undefined;
  return row === undefined ? null : toJob(row);
}

export function lostOr(exec: SqliteExecutor, id: number, row: JobRow | undefined): JobTransitionResult {
  if (row !== undefined) return { ok: true, job: toJob(row) };
  const job = jobById(exec, id);
  if (job === null) throw new NotFoundError('job', String(id));
  return { ok: false, reason: 'lost', job };
}

export interface ClaimDueParams {
  readonly session: SessionRow;
  readonly host: string | undefined;
  readonly now: number;
  readonly start: boolean;
  readonly limit: number;
  /** When the lease of each job taken runs out; null for a claim held by liveness alone. */
  readonly leaseUntil: number | null;
}

/**
 * Claims up to `limit` due jobs for the session, in queue order, passing over jobs whose task is
 * not open or waits behind a gate, with one `job:claimed` ledger row each (`started: true` with a
 * start, decision 0023): the epoch and attempt grow, the holder and host are set, a start stamps
 * started_at.
 */
function claimDue(exec: SqliteExecutor, params: ClaimDueParams): JobRow[] {
  const rows = exec
    .prepare(
      `UPDATE jobs SET ${CLAIM_DUE_SET}
       WHERE id IN (SELECT id FROM jobs q WHERE status = 'queued' AND run_after <= @now
                      AND ${jobTaskOpen('q')}
                    ORDER BY priority, queued_at, id LIMIT @limit)
         AND status = 'queued'
       ${RETURNING}`,
    )
    .all({
      status: params.start ? 'running' : 'claimed',
      session: params.session.id,
      host: params.host ?? params.session.host,
      now: params.now,
      startedAt: params.start ? params.now : null,
      lease: params.leaseUntil,
      limit: params.limit,
    }) as JobRow[];
  // RETURNING promises no order: hand the jobs out, and audit them, in queue order.
  rows.sort(
    (left, right) => left.priority - right.priority || left.queued_at - right.queued_at || left.id - right.id,
  );
  for (const row of rows) {
    const audit = {
      at: params.now,
      key: row.key,
      jobId: row.id,
      session: params.session.id,
      epoch: row.epoch,
    };
    appendAudit(exec, {
      ...audit,
      type: 'job:claimed',
      detail: { attempt: row.attempt, host: row.host, ...(params.start ? { started: true } : {}) },
    });
  }
  return rows;
}

/**
 * claimNext's claim of a queued job: the best due one, claimed (or started) for the session and held
 * by its liveness alone (no job lease).
 */
export function claimOneDue(
  exec: SqliteExecutor,
  session: SessionRow,
  params: { readonly host?: string | undefined; readonly start?: boolean | undefined },
  now: number,
): JobRow | undefined {
  const start = params.start === true;
  return claimDue(exec, { session, host: params.host, now, start, limit: 1, leaseUntil: null })[0];
}

/** The body of finish: guarded by the shared finish guard (store/job-guard.ts). */
export function finishIn(
  exec: SqliteExecutor,
  params: JobFinishParams,
  now = exec.now(),
  /** More of the `job:finished` row's detail: who ended it, when not its holder (the leader's sweep). */
  by: Readonly<Record<string, unknown>> = {},
): JobTransitionResult {
  const guard = finishGuard({
    job: 'jobs',
    id: '@id',
    session: '@session',
    epoch: '@epoch',
    status: '@status',
    now: '@now',
  });
  const row = exec
    .prepare(
      `UPDATE jobs SET status = @status, finished_at = @now, exit_code = @exitCode,
         reason = @reason, output_tail = @tail
       WHERE ${guard}
       ${RETURNING}`,
    )
    .get({
      status: params.status,
      now,
      exitCode: params.exitCode ?? null,
      reason: params.reason ?? null,
      tail: params.outputTail ?? null,
      id: params.id,
      session: params.session,
      epoch: params.epoch,
    }) as JobRow | undefined;
  if (row !== undefined) {
    const task = params.status === 'done' ? finishTask(exec, now, row) : null;
    appendAudit(exec, {
      at: now,
      type: 'job:finished',
      key: row.key,
      jobId: params.id,
      session: params.session,
      epoch: params.epoch,
      detail: {
        status: params.status,
        exitCode: params.exitCode ?? null,
        ...(task === null ? {} : { task }),
        // Why it ended, when the finish said (an exit's cause, a budget): the job row's reason.
        ...(params.reason == null ? {} : { reason: params.reason }),
        ...by,
      },
    });
    releaseJobLocks(exec, now, params.id, 'released');
  }
  return lostOr(exec, params.id, row);
}

/**
 * A job that ended done finishes its open task (to done, or in review when it requires it). The
 * move, for the job's `job:finished` row (decision 0023), or null when the task was not open.
 */
function finishTask(exec: SqliteExecutor, now: number, job: JobRow): TaskMove | null {
  const task = exec.prepare('SELECT * FROM tasks WHERE id = ?').get(job.task_id) as TaskRow;
  if (task.state !== 'open') return null;
  return moveTask(exec, now, task, {
    action: 'finish',
    by: { name: `job ${job.id}`, session: job.session_id },
  }).move;
}

/**
 * Gives back up to `limit` jobs whose lease has passed, oldest lease first: to the queue, or
 * failed once their attempts are spent, each audited, its workspace lock released.
 */
function giveBackExpired(exec: SqliteExecutor, now: number, limit: number): void {
  const expired = exec
    .prepare(
      `${JOB_SELECT} WHERE j.lease_until <= ? AND j.status IN ${HELD_SQL}
       ORDER BY j.lease_until, j.id LIMIT ?`,
    )
    .all(now, limit) as JobRow[];
  // In id order, as PostgreSQL's ordered ledger insert writes them.
  for (const job of expired.sort((left, right) => left.id - right.id)) {
    const again = job.attempt < job.attempt_max;
    const base = { at: now, key: job.key, jobId: job.id, session: job.session_id, epoch: job.epoch };
    if (again) {
      exec
        .prepare(
          `UPDATE jobs SET status = 'queued', run_after = ?, session_id = NULL, host = NULL,
             agent_session_id = NULL, pid = NULL, term = NULL, lease_until = NULL, reason = ?
           WHERE id = ? AND epoch = ? AND status = ?`,
        )
        .run(now, `requeued: ${LEASE_EXPIRED}`, job.id, job.epoch, job.status);
      appendAudit(exec, {
        ...base,
        type: 'job:requeued',
        detail: { reason: LEASE_EXPIRED, attempt: job.attempt },
      });
    } else {
      exec
        .prepare(
          `UPDATE jobs SET status = 'failed', finished_at = ?, agent_session_id = NULL, pid = NULL,
             term = NULL, reason = ?
           WHERE id = ? AND epoch = ? AND status = ?`,
        )
        .run(now, `attempts exhausted: ${LEASE_EXPIRED}`, job.id, job.epoch, job.status);
      appendAudit(exec, {
        ...base,
        type: 'job:finished',
        detail: { status: 'failed', reason: LEASE_EXPIRED },
      });
    }
    releaseJobLocks(exec, now, job.id, 'released');
  }
}

/** jobs.batch, inside the caller's write transaction. */
export function batchIn(exec: SqliteExecutor, params: JobBatchParams): JobBatchResult {
  const take = params.take ?? 0;
  const finish = params.finish ?? [];
  assert(new Set(finish.map((member) => member.id)).size === finish.length, 'a batch finishes each job once');
  // Taking needs a live session; a session that is not live changes nothing.
  const session = take > 0 ? sessionRow(exec, params.session, true) : null;
  const now = exec.now();
  // Each member held to its own time limit first: one past it fails `timed out` alone (decision 0037).
  const finished = finish.map((member): JobBatchMember => {
    const asked = { ...member, session: params.session };
    const limit = failIn(exec, asked, now);
    if (!limit.timedOut) return finishIn(exec, asked, now);
    return limit.finished.ok ? { ...limit.finished, timedOut: true } : limit.finished;
  });
  if (session === null) return { finished, taken: [], leaseUntil: null };
  const leaseUntil = now + (params.leaseMs ?? 0);
  const rows = claimDue(exec, { session, host: params.host, now, start: true, limit: take, leaseUntil });
  // After the take, as on PostgreSQL (one snapshot): a job given back goes to a later batch.
  giveBackExpired(exec, now, take);
  // A member refused is answered as it is once the batch is done, as PostgreSQL reads it after
  // its statement: one past its lease has just been given back by this very batch.
  const answered = finished.map((result, index) => {
    const id = finish[index]?.id;
    return result.ok || id === undefined ? result : lostOr(exec, id, undefined);
  });
  return { finished: answered, taken: rows.map(toJob), leaseUntil: rows.length === 0 ? null : leaseUntil };
}
