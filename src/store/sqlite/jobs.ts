/**
 * Queue jobs on SQLite: every transition is one guarded UPDATE inside BEGIN IMMEDIATE; the steps
 * a worker repeats (claim, finish, the batch) are in job-steps.ts.
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
  JobListParams,
  Store,
} from '../store.js';
import { releaseJobLocks } from './locks.js';
import { withActor } from '../actor.js';
import { appendAudit, toJob, type JobRow, type SessionRow, type TaskRow } from './rows.js';
import { RETURNING, batchIn, claimDue, finishIn, jobById, lostOr } from './job-steps.js';
import { ACTIVE_SQL } from '../job-guard.js';
import { fromSync, type SqliteExecutor, type Sync } from './executor.js';
import { TickBatcher } from './tick-batcher.js';
import { insertTask, sessionRow, taskRow } from './tasks-claims.js';
import { taskStateRefusal } from '../task-refusal.js';
import { facts } from './task-state.js';

export { jobById };

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';

export function sqliteJobs(exec: SqliteExecutor): Store['jobs'] {
  // Several workers of one process share a commit (tick-batcher.ts); each call stands alone.
  const loops = new TickBatcher(exec, (p: JobFinishAndClaimNextParams) => loopIn(exec, p));
  const sync: Sync<Omit<Store['jobs'], 'finishAndClaimNext' | 'start'>> = {
    enqueue: (p) => exec.write(() => enqueueIn(exec, p)),
    claimNext: (p) => exec.write(() => claimNextIn(exec, p)),
    finish: (p) => exec.write(() => finishIn(exec, p)),
    batch: (p) => exec.write(() => batchIn(exec, p)),
    cancel: (p) => exec.write(() => cancelIn(exec, p)),
    retry: (p) => exec.write(() => retryIn(exec, p)),
    get: (id) => exec.read(() => jobById(exec, id)),
    list: (p = {}) => exec.read(() => listIn(exec, p)),
  };
  return {
    ...fromSync(sync),
    finishAndClaimNext: (p) => loops.submit(p),
    // A run sends its start with its agent's session: one commit for both (SqliteExecutor.grouped).
    start: (p) => exec.grouped(() => startIn(exec, p)),
  };
}

/** jobs.enqueue, inside the caller's write transaction: the task's active job, or a new one. */
function enqueueIn(exec: SqliteExecutor, p: JobEnqueueParams): JobEnqueueResult {
  const now = exec.now();
  const task = taskRow(exec, p.key) ?? insertTask(exec, now, { key: p.key, by: p.by, actor: p.actor });
  if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
  const active = exec
    .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ${ACTIVE_SQL}`)
    .get(task.id) as JobRow | undefined;
  if (active !== undefined) return { job: toJob(active), created: false };
  const row = exec
    .prepare(
      `INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max)
               VALUES (?, ?, ?, ?, ?, ?) ${RETURNING}`,
    )
    .get(
      task.id,
      p.priority ?? task.priority,
      now,
      p.ramMb ?? null,
      p.command ?? null,
      p.attemptMax ?? 3,
    ) as JobRow;
  appendAudit(exec, {
    at: now,
    type: 'job:enqueued',
    key: p.key,
    jobId: row.id,
    session: p.by ?? null,
    detail: withActor({ priority: row.priority, ramMb: row.ram_mb }, p.actor),
  });
  return { job: toJob(row), created: true };
}

/** jobs.cancel, inside the caller's write transaction. */
function cancelIn(exec: SqliteExecutor, p: JobCancelParams): JobTransitionResult {
  const now = exec.now();
  const was = (
    exec.prepare('SELECT status FROM jobs WHERE id = ?').get(p.id) as { status: string } | undefined
  )?.status;
  const row = exec
    .prepare(
      `UPDATE jobs SET status = 'cancelled', finished_at = ?, reason = ?
               WHERE id = ? AND status IN ${ACTIVE_SQL} ${RETURNING}`,
    )
    .get(now, cancelReason(p), p.id) as JobRow | undefined;
  if (row !== undefined) {
    appendAudit(exec, {
      at: now,
      type: 'job:cancelled',
      key: row.key,
      jobId: p.id,
      session: p.by ?? null,
      epoch: row.epoch,
      detail: { reason: row.reason, by: p.actor ?? null },
    });
    // A running job's agent may still be at work: its runner releases the lock once the
    // tree is dead (workspaceLocks.releaseJob). Before that, no agent was ever spawned.
    if (was !== 'running') releaseJobLocks(exec, now, p.id, 'released');
  }
  return lostOr(exec, p.id, row);
}

/** jobs.retry, inside the caller's write transaction: the task's active job, or a copy of the ended one. */
function retryIn(exec: SqliteExecutor, p: Parameters<Store['jobs']['retry']>[0]): JobEnqueueResult {
  const old = exec.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(p.id) as JobRow | undefined;
  if (old === undefined) throw new NotFoundError('job', String(p.id));
  if (!isTerminalJobState(old.status as JobState)) {
    throw new ConflictError(`job ${p.id} is ${old.status}`, 'only an ended job can be retried');
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
      `INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max)
               VALUES (?, ?, ?, ?, ?, ?) ${RETURNING}`,
    )
    .get(old.task_id, old.priority, now, old.ram_mb, old.command, old.attempt_max) as JobRow;
  appendAudit(exec, {
    at: now,
    type: 'job:enqueued',
    key: row.key,
    jobId: row.id,
    session: p.by ?? null,
    detail: { priority: row.priority, ramMb: row.ram_mb, retryOf: p.id, by: p.actor ?? null },
  });
  return { job: toJob(row), created: true };
}

/** jobs.list, inside the caller's read transaction: the busiest states first, then queue order. */
function listIn(exec: SqliteExecutor, p: JobListParams): Job[] {
  const statuses = p.status === undefined ? null : JSON.stringify(p.status);
  return (
    exec
      .prepare(
        `${JOB_SELECT}
                 WHERE (@statuses IS NULL OR j.status IN (SELECT value FROM json_each(@statuses)))
                   AND (@key IS NULL OR t.key = @key)
                 ORDER BY j.status <> 'running', j.status <> 'claimed', j.status <> 'queued',
                   j.priority, j.queued_at, j.id
                 LIMIT @limit`,
      )
      .all({ statuses, key: p.key ?? null, limit: p.limit ?? 1000 }) as JobRow[]
  ).map(toJob);
}

/** The body of finishAndClaimNext, inside the caller's write transaction. */
function loopIn(exec: SqliteExecutor, p: JobFinishAndClaimNextParams) {
  const session = sessionRow(exec, p.session, true); // a session that is not live changes nothing
  const now = exec.now();
  const finished = finishIn(exec, p, now);
  const next = claimNextIn(exec, { session: p.session, host: p.host, start: p.start }, { session, now });
  return { finished, next };
}

/** The body of claimNext, inside the caller's write transaction. */
function claimNextIn(
  exec: SqliteExecutor,
  p: JobClaimNextParams,
  known: { session: SessionRow; now: number } | null = null,
): Job | null {
  const session = known?.session ?? sessionRow(exec, p.session, true);
  const now = known?.now ?? exec.now();
  const [row] = claimDue(exec, {
    session,
    host: p.host,
    now,
    start: p.start === true,
    limit: 1,
    leaseUntil: null,
  });
  return row === undefined ? null : toJob(row);
}

/** jobs.start: claimed → running, guarded by (session, epoch), with its `job:started` row. */
function startIn(exec: SqliteExecutor, p: JobGuardParams): JobTransitionResult {
  const now = exec.now();
  const row = exec
    .prepare(
      `UPDATE jobs SET status = 'running', started_at = ?
               WHERE id = ? AND session_id = ? AND epoch = ? AND status = 'claimed' ${RETURNING}`,
    )
    .get(now, p.id, p.session, p.epoch) as JobRow | undefined;
  if (row !== undefined) {
    appendAudit(exec, {
      at: now,
      type: 'job:started',
      key: row.key,
      jobId: p.id,
      session: p.session,
      epoch: p.epoch,
    });
  }
  return lostOr(exec, p.id, row);
}
