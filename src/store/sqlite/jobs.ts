/**
 * Queue jobs on SQLite: every transition is one guarded UPDATE inside BEGIN IMMEDIATE; the steps
 * a worker repeats (claim, finish, the batch) are in job-steps.ts, the hand-off at enqueue in hand-off.ts.
 */
import { cancelReason } from '../../core/job.js';
import { isTerminalJobState, type Job, type JobState, type JobTransitionResult } from '../../core/job.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type {
  JobCancelParams,
  JobClaimNextParams,
  JobEnqueueParams,
  JobEnqueueResult,
  JobFinishAndClaimNextParams,
  JobGuardParams,
  Store,
} from '../store.js';
import { releaseJobLocks } from './locks.js';
import { listJobsIn } from './job-list.js';
import { withActor } from '../actor.js';
import { appendAudit, toJob, type JobRow, type SessionRow, type TaskRow } from './rows.js';
import { RETURNING, batchIn, claimOneDue, finishIn, jobById, lostOr } from './job-steps.js';
import { ACTIVE_SQL } from '../job-guard.js';
import { fromSync, type SqliteExecutor, type Sync } from './executor.js';
import { TickBatcher } from './tick-batcher.js';
import { insertTask, sessionRow, taskRow } from './tasks-claims.js';
import { taskStateRefusal } from '../task-refusal.js';
import { facts } from './task-state.js';
import { taskOpen } from './claim-set.js';
import { handedColumns, handedTo, sqliteHandOffs, waiterFor } from './hand-off.js';

export { jobById };

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';

export function sqliteJobs(exec: SqliteExecutor): Store['jobs'] {
  const handOffs = sqliteHandOffs(exec);
  // Several workers of one process share a commit (tick-batcher.ts); each call stands alone.
  const loops = new TickBatcher(exec, (params: JobFinishAndClaimNextParams) => loopIn(exec, params));
  const sync: Sync<Omit<Store['jobs'], 'finishAndClaimNext' | 'start' | 'claimNext' | 'settle'>> = {
    enqueue: (params) => exec.write(() => enqueueIn(exec, params)),
    finish: (params) => exec.write(() => finishIn(exec, params)),
    batch: (params) => exec.write(() => batchIn(exec, params)),
    cancel: (params) => exec.write(() => cancelIn(exec, params)),
    retry: (params) => exec.write(() => retryIn(exec, params)),
    get: (id) => exec.read(() => jobById(exec, id)),
    list: (params = {}) => exec.read(() => listJobsIn(exec, params)),
  };
  return {
    ...fromSync(sync),
    claimNext: (params) => handOffs.claimNext(params),
    finishAndClaimNext: (params) => loops.submit(params),
    // Commits with writes sent in the same turn (SqliteExecutor.grouped); a run's start goes by runs.begin.
    start: (params) => exec.grouped(() => startIn(exec, params)),
  };
}

/** jobs.enqueue, inside the caller's write transaction: the task's active job, or a new one. */
function enqueueIn(exec: SqliteExecutor, params: JobEnqueueParams): JobEnqueueResult {
  const now = exec.now();
  const task =
    taskRow(exec, params.key) ??
    insertTask(exec, now, { key: params.key, by: params.by, actor: params.actor });
  if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
  const active = exec
    .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ${ACTIVE_SQL}`)
    .get(task.id) as JobRow | undefined;
  if (active !== undefined) return { job: toJob(active), created: false };
  // Inserted already claimed when a session waits (a hand-off, hand-off.ts), as on PostgreSQL.
  // Only for a task that takes jobs (claim-set.ts): behind no gate and waiting for no task.
  const takes = exec.prepare(`SELECT ${taskOpen('t')} AS open FROM tasks t WHERE t.id = ?`).get(task.id) as {
    open: number;
  };
  const waiter = takes.open === 1 ? waiterFor(exec, now) : undefined;
  const row = exec
    .prepare(
      `INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max,
                 status, epoch, attempt, session_id, host, claimed_at, started_at, time_limit_ms)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${RETURNING}`,
    )
    .get(
      ...[task.id, params.priority ?? task.priority, now, params.ramMb ?? null, params.command ?? null],
      params.attemptMax ?? 3,
      ...handedColumns(waiter, now),
      params.timeLimitMs ?? null,
    ) as JobRow;
  appendAudit(exec, {
    at: now,
    type: 'job:enqueued',
    key: params.key,
    jobId: row.id,
    session: params.by ?? null,
    detail: withActor({ priority: row.priority, ramMb: row.ram_mb, ...limitDetail(row) }, params.actor),
  });
  if (waiter !== undefined) handedTo(exec, waiter, row, now);
  return { job: toJob(row), created: true };
}

/** jobs.cancel, inside the caller's write transaction. */
function cancelIn(exec: SqliteExecutor, params: JobCancelParams): JobTransitionResult {
  const now = exec.now();
  const was = (
    exec.prepare('SELECT status FROM jobs WHERE id = ?').get(params.id) as { status: string } | undefined
  )?.status;
  const row = exec
    .prepare(
      `UPDATE jobs SET status = 'cancelled', finished_at = ?, reason = ?
               WHERE id = ? AND status IN ${ACTIVE_SQL} ${RETURNING}`,
    )
    .get(now, cancelReason(params), params.id) as JobRow | undefined;
  if (row !== undefined) {
    appendAudit(exec, {
      at: now,
      type: 'job:cancelled',
      key: row.key,
      jobId: params.id,
      session: params.by ?? null,
      epoch: row.epoch,
      detail: { reason: row.reason, by: params.actor ?? null },
    });
    // A running job's agent may still be at work: its runner releases the lock once the
    // tree is dead (workspaceLocks.releaseJob). Before that, no agent was ever spawned.
    if (was !== 'running') releaseJobLocks(exec, now, params.id, 'released');
  }
  return lostOr(exec, params.id, row);
}

/** jobs.retry, inside the caller's write transaction: the task's active job, or a copy of the ended one. */
function retryIn(exec: SqliteExecutor, params: Parameters<Store['jobs']['retry']>[0]): JobEnqueueResult {
  const old = exec.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(params.id) as JobRow | undefined;
  if (old === undefined) throw new NotFoundError('job', String(params.id));
  if (!isTerminalJobState(old.status as JobState)) {
    throw new ConflictError(`job ${params.id} is ${old.status}`, 'only an ended job can be retried');
  }
  const task = exec.prepare('SELECT * FROM tasks WHERE id = ?').get(old.task_id) as TaskRow;
  if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
  const active = exec
    .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ${ACTIVE_SQL}`)
    .get(old.task_id) as JobRow | undefined;
  if (active !== undefined) return { job: toJob(active), created: false };
  const now = exec.now();
  const row = exec
    .prepare(
      `INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max, time_limit_ms)
               VALUES (?, ?, ?, ?, ?, ?, ?) ${RETURNING}`,
    )
    .get(
      old.task_id,
      old.priority,
      now,
      params.ramMb === undefined ? old.ram_mb : params.ramMb,
      old.command,
      old.attempt_max,
      old.time_limit_ms,
    ) as JobRow;
  appendAudit(exec, {
    at: now,
    type: 'job:enqueued',
    key: row.key,
    jobId: row.id,
    session: params.by ?? null,
    detail: {
      priority: row.priority,
      ramMb: row.ram_mb,
      retryOf: params.id,
      by: params.actor ?? null,
      ...limitDetail(row),
    },
  });
  return { job: toJob(row), created: true };
}

/** The body of finishAndClaimNext, inside the caller's write transaction. */
function loopIn(exec: SqliteExecutor, params: JobFinishAndClaimNextParams) {
  const session = sessionRow(exec, params.session, true); // a session that is not live changes nothing
  const now = exec.now();
  const finished = finishIn(exec, params, now);
  const next = claimNextIn(
    exec,
    { session: params.session, host: params.host, start: params.start },
    { session, now },
  );
  return { finished, next };
}

/** The body of claimNext, inside the caller's write transaction. */
function claimNextIn(
  exec: SqliteExecutor,
  params: JobClaimNextParams,
  known: { session: SessionRow; now: number } | null = null,
): Job | null {
  const session = known?.session ?? sessionRow(exec, params.session, true);
  const now = known?.now ?? exec.now();
  const row = claimOneDue(exec, session, params, now);
  return row === undefined ? null : toJob(row);
}

/** jobs.start: claimed → running, guarded by (session, epoch), with its `job:started` row. */
export function startIn(exec: SqliteExecutor, params: JobGuardParams): JobTransitionResult {
  const now = exec.now();
  const row = exec
    .prepare(
      `UPDATE jobs SET status = 'running', started_at = ?
               WHERE id = ? AND session_id = ? AND epoch = ? AND status = 'claimed' ${RETURNING}`,
    )
    .get(now, params.id, params.session, params.epoch) as JobRow | undefined;
  if (row !== undefined) {
    appendAudit(exec, {
      at: now,
      type: 'job:started',
      key: row.key,
      jobId: params.id,
      session: params.session,
      epoch: params.epoch,
    });
  }
  return lostOr(exec, params.id, row);
}

/** The time limit in a job:enqueued row, when the job has its own. */
function limitDetail(row: JobRow): { timeLimitMs?: number } {
  return row.time_limit_ms === null ? {} : { timeLimitMs: row.time_limit_ms };
}
