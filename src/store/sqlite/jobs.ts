/**
 * Queue jobs on SQLite: every transition is one guarded UPDATE inside BEGIN IMMEDIATE; the steps
 * a worker repeats (claim, finish, the batch) are in job-steps.ts.
 */
import { cancelReason } from '../../core/job.js';
import { isTerminalJobState, type Job, type JobState } from '../../core/job.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { JobClaimNextParams, JobFinishAndClaimNextParams, Store } from '../store.js';
import { releaseJobLocks } from './locks.js';
import { withActor } from '../actor.js';
import { appendAudit, toJob, type JobRow, type SessionRow, type TaskRow } from './rows.js';
import { RETURNING, batchIn, claimDue, finishIn, jobById, lostOr } from './job-steps.js';
import { ACTIVE_SQL } from '../job-guard.js';
import { fromSync, type SqliteRunner, type Sync } from './runner.js';
import { TickBatcher } from './tick-batcher.js';
import { insertTask, sessionRow, taskRow } from './tasks-claims.js';
import { taskStateRefusal } from '../task-refusal.js';
import { facts } from './task-state.js';

export { jobById };

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';

export function sqliteJobs(run: SqliteRunner): Store['jobs'] {
  // Several workers of one process share a commit (tick-batcher.ts); each call stands alone.
  const loops = new TickBatcher(run, (p: JobFinishAndClaimNextParams) => loopIn(run, p));
  const sync: Sync<Omit<Store['jobs'], 'finishAndClaimNext'>> = {
    enqueue: (p) =>
      run.write(() => {
        const now = run.now();
        const task = taskRow(run, p.key) ?? insertTask(run, now, { key: p.key, by: p.by, actor: p.actor });
        if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
        const active = run
          .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ${ACTIVE_SQL}`)
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
          detail: withActor({ priority: row.priority, ramMb: row.ram_mb }, p.actor),
        });
        return { job: toJob(row), created: true };
      }),
    claimNext: (p) => run.write(() => claimNextIn(run, p)),
    start: (p) =>
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
    finish: (p) => run.write(() => finishIn(run, p)),
    batch: (p) => run.write(() => batchIn(run, p)),
    cancel: (p) =>
      run.write(() => {
        const now = run.now();
        const was = (
          run.prepare('SELECT status FROM jobs WHERE id = ?').get(p.id) as { status: string } | undefined
        )?.status;
        const row = run
          .prepare(
            `UPDATE jobs SET status = 'cancelled', finished_at = ?, reason = ?
               WHERE id = ? AND status IN ${ACTIVE_SQL} ${RETURNING}`,
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
    retry: (p) =>
      run.write(() => {
        const old = run.prepare(`${JOB_SELECT} WHERE j.id = ?`).get(p.id) as JobRow | undefined;
        if (old === undefined) throw new NotFoundError('job', String(p.id));
        if (!isTerminalJobState(old.status as JobState)) {
          throw new ConflictError(`job ${p.id} is ${old.status}`, 'only an ended job can be retried');
        }
        const task = run.prepare('SELECT * FROM tasks WHERE id = ?').get(old.task_id) as TaskRow;
        if (task.state !== 'open') throw taskStateRefusal(facts(task), 'enqueue');
        const active = run
          .prepare(`${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ${ACTIVE_SQL}`)
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
          detail: { priority: row.priority, ramMb: row.ram_mb, retryOf: p.id, by: p.actor ?? null },
        });
        return { job: toJob(row), created: true };
      }),
    get: (id) => run.read(() => jobById(run, id)),
    list: (p = {}) =>
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
  };
  return { ...fromSync(sync), finishAndClaimNext: (p) => loops.submit(p) };
}

/** The body of finishAndClaimNext, inside the caller's write transaction. */
function loopIn(run: SqliteRunner, p: JobFinishAndClaimNextParams) {
  const session = sessionRow(run, p.session, true); // a session that is not live changes nothing
  const now = run.now();
  const finished = finishIn(run, p, now);
  const next = claimNextIn(run, { session: p.session, host: p.host, start: p.start }, { session, now });
  return { finished, next };
}

/** The body of claimNext, inside the caller's write transaction. */
function claimNextIn(
  run: SqliteRunner,
  p: JobClaimNextParams,
  known: { session: SessionRow; now: number } | null = null,
): Job | null {
  const session = known?.session ?? sessionRow(run, p.session, true);
  const now = known?.now ?? run.now();
  const [row] = claimDue(run, {
    session,
    host: p.host,
    now,
    start: p.start === true,
    limit: 1,
    leaseUntil: null,
  });
  return row === undefined ? null : toJob(row);
}
