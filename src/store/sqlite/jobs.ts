/** Queue jobs on SQLite: every transition is one guarded UPDATE inside BEGIN IMMEDIATE. */
import { cancelReason } from '../../core/job.js';
import { isTerminalJobState, type Job, type JobState, type JobTransitionResult } from '../../core/job.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { JobClaimNextParams, JobFinishAndClaimNextParams, JobFinishParams, Store } from '../store.js';
import { releaseJobLocks } from './locks.js';
import { appendAudit, toJob, type JobRow, type SessionRow, type TaskRow } from './rows.js';
import type { SqliteRunner } from './runner.js';
import { TickBatcher } from './tick-batcher.js';
import { insertTask, sessionRow, taskRow } from './tasks-claims.js';
import { taskStateRefusal } from '../task-refusal.js';
import { changeTaskState, facts } from './task-state.js';

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';
const RETURNING = 'RETURNING *, (SELECT key FROM tasks WHERE id = jobs.task_id) AS key';

export function jobById(run: SqliteRunner, id: number): Job | null {
  const row = run.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(id) as JobRow | undefined;
  return row === undefined ? null : toJob(row);
}

function lostOr(run: SqliteRunner, id: number, row: JobRow | undefined): JobTransitionResult {
  if (row !== undefined) return { ok: true, job: toJob(row) };
  const job = jobById(run, id);
  if (job === null) throw new NotFoundError('job', String(id));
  return { ok: false, reason: 'lost', job };
}

export function sqliteJobs(run: SqliteRunner): Store['jobs'] {
  // Several workers of one process share a commit (tick-batcher.ts); each call stands alone.
  const loops = new TickBatcher(run, (p: JobFinishAndClaimNextParams) => {
    const session = sessionRow(run, p.session, true); // a session that is not live changes nothing
    const now = run.now();
    const finished = finishIn(run, p, now);
    const next = claimNextIn(run, { session: p.session, host: p.host, start: p.start }, { session, now });
    return { finished, next };
  });
  return {
    enqueue: (p) =>
      Promise.resolve(
        run.write(() => {
          const now = run.now();
          const task = taskRow(run, p.key) ?? insertTask(run, now, { key: p.key, by: p.by });
          if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
          const active = run
            .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ('queued', 'claimed', 'running')`)
            .get(task.id) as JobRow | undefined;
          if (active !== undefined) return { job: toJob(active), created: false };
          const row = run
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
          appendAudit(run, {
            at: now,
            type: 'job:enqueued',
            key: p.key,
            jobId: row.id,
            session: p.by ?? null,
            detail: { priority: row.priority, ramMb: row.ram_mb },
          });
          return { job: toJob(row), created: true };
        }),
      ),
    claimNext: (p) => Promise.resolve(run.write(() => claimNextIn(run, p))),
    start: (p) =>
      Promise.resolve(
        run.write(() => {
          const now = run.now();
          const row = run
            .prepare(
              `UPDATE jobs SET status = 'running', started_at = ?
               WHERE id = ? AND session_id = ? AND epoch = ? AND status = 'claimed' ${RETURNING}`,
            )
            .get(now, p.id, p.session, p.epoch) as JobRow | undefined;
          if (row !== undefined) {
            appendAudit(run, {
              at: now,
              type: 'job:started',
              key: row.key,
              jobId: p.id,
              session: p.session,
              epoch: p.epoch,
            });
          }
          return lostOr(run, p.id, row);
        }),
      ),
    finish: (p) => Promise.resolve(run.write(() => finishIn(run, p))),
    finishAndClaimNext: (p) => loops.submit(p),
    cancel: (p) =>
      Promise.resolve(
        run.write(() => {
          const now = run.now();
          const was = (
            run.prepare('SELECT status FROM jobs WHERE id = ?').get(p.id) as { status: string } | undefined
          )?.status;
          const row = run
            .prepare(
              `UPDATE jobs SET status = 'cancelled', finished_at = ?, reason = ?
               WHERE id = ? AND status IN ('queued', 'claimed', 'running') ${RETURNING}`,
            )
            .get(now, cancelReason(p), p.id) as JobRow | undefined;
          if (row !== undefined) {
            appendAudit(run, {
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
            if (was !== 'running') releaseJobLocks(run, now, p.id, 'released');
          }
          return lostOr(run, p.id, row);
        }),
      ),
    retry: (p) =>
      Promise.resolve(
        run.write(() => {
          const old = run.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(p.id) as JobRow | undefined;
          if (old === undefined) throw new NotFoundError('job', String(p.id));
          if (!isTerminalJobState(old.status as JobState)) {
            throw new ConflictError(`job ${p.id} is ${old.status}`, 'only an ended job can be retried');
          }
          const task = run.prepare('SELECT * FROM tasks WHERE id = ?').get(old.task_id) as TaskRow;
          if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
          const active = run
            .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ('queued', 'claimed', 'running')`)
            .get(old.task_id) as JobRow | undefined;
          if (active !== undefined) return { job: toJob(active), created: false };
          const now = run.now();
          const row = run
            .prepare(
              `INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max)
               VALUES (?, ?, ?, ?, ?, ?) ${RETURNING}`,
            )
            .get(old.task_id, old.priority, now, old.ram_mb, old.command, old.attempt_max) as JobRow;
          appendAudit(run, {
            at: now,
            type: 'job:enqueued',
            key: row.key,
            jobId: row.id,
            session: p.by ?? null,
            detail: { priority: row.priority, ramMb: row.ram_mb, retryOf: p.id },
          });
          return { job: toJob(row), created: true };
        }),
      ),
    get: (id) => Promise.resolve(run.read(() => jobById(run, id))),
    list: (p = {}) =>
      Promise.resolve(
        run.read(() => {
          const statuses = p.status === undefined ? null : JSON.stringify(p.status);
          return (
            run
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
        }),
      ),
  };
}

/** The body of claimNext, inside the caller's write transaction. */
function claimNextIn(
  run: SqliteRunner,
  p: JobClaimNextParams,
  known: { session: SessionRow; now: number } | null = null,
): Job | null {
  const session = known?.session ?? sessionRow(run, p.session, true);
  const now = known?.now ?? run.now();
  const start = p.start === true;
  // The single writer makes select-and-update atomic; the status guard is kept anyway. A job
  // whose task is not open or waits behind a gate is passed over.
  const row = run
    .prepare(
      `UPDATE jobs SET status = @status, epoch = epoch + 1, attempt = attempt + 1,
         session_id = @session, host = @host, claimed_at = @now, started_at = @startedAt,
         reason = NULL, term = NULL
       WHERE id = (SELECT id FROM jobs q WHERE status = 'queued' AND run_after <= @now
                     AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = q.task_id
                                     AND (t.state <> 'open' OR t.gate IS NOT NULL))
                   ORDER BY priority, queued_at, id LIMIT 1)
         AND status = 'queued'
       ${RETURNING}`,
    )
    .get({
      status: start ? 'running' : 'claimed',
      session: p.session,
      host: p.host ?? session.host,
      now,
      startedAt: start ? now : null,
    }) as JobRow | undefined;
  if (row === undefined) return null;
  const audit = { at: now, key: row.key, jobId: row.id, session: p.session, epoch: row.epoch };
  appendAudit(run, { ...audit, type: 'job:claimed', detail: { attempt: row.attempt, host: row.host } });
  if (start) appendAudit(run, { ...audit, type: 'job:started' });
  return toJob(row);
}

/** The body of finish, inside the caller's write transaction. */
function finishIn(run: SqliteRunner, p: JobFinishParams, now = run.now()): JobTransitionResult {
  const row = run
    .prepare(
      `UPDATE jobs SET status = @status, finished_at = @now, exit_code = @exitCode,
         reason = @reason, output_tail = @tail
       WHERE id = @id AND session_id = @session AND epoch = @epoch
         AND (status = 'running' OR (status = 'claimed' AND @status IN ('failed', 'cancelled')))
       ${RETURNING}`,
    )
    .get({
      status: p.status,
      now,
      exitCode: p.exitCode ?? null,
      reason: p.reason ?? null,
      tail: p.outputTail ?? null,
      id: p.id,
      session: p.session,
      epoch: p.epoch,
    }) as JobRow | undefined;
  if (row !== undefined) {
    appendAudit(run, {
      at: now,
      type: 'job:finished',
      key: row.key,
      jobId: p.id,
      session: p.session,
      epoch: p.epoch,
      detail: { status: p.status, exitCode: p.exitCode ?? null },
    });
    releaseJobLocks(run, now, p.id, 'released');
    if (p.status === 'done') finishTask(run, now, row);
  }
  return lostOr(run, p.id, row);
}

/** A job that ended done finishes its open task (to done, or in review when it requires it). */
function finishTask(run: SqliteRunner, now: number, job: JobRow): void {
  const task = run.prepare('SELECT * FROM tasks WHERE id = ?').get(job.task_id) as TaskRow;
  if (task.state !== 'open') return;
  changeTaskState(run, now, task, {
    action: 'finish',
    by: { name: `job ${job.id}`, session: job.session_id },
  });
}
