/**
 * The give-back of a job on SQLite, inside its caller's write transaction: by its runner
 * (dispatch.requeue), by the sweep (recovery.rescueStale), and by the end of the session that
 * held it in pull mode (sessions.end).
 */
import type { JobId } from '../../core/job.js';
import { backoffMs, type RetryPolicy } from '../../core/retry.js';
import type { LockOutcome } from '../../core/workspace-lock.js';
import { emptyReport, rescueReason, sessionEnded, type MutableReport } from '../rescue.js';
import type { SqliteExecutor } from './executor.js';
import { releaseJobLocks } from './locks.js';
import { appendAudit, type JobRow } from './rows.js';

/**
 * sessions.end's give-back of the jobs the session took in pull mode (claimNext, jobs.batch: no
 * dispatcher term), each at once with its attempt given back, as a runner's on a graceful
 * shutdown: the worker let go, nothing failed; answers the ids queued again. A late finish by the
 * old holder meets a queued job (then the next claim's epoch) and is refused. A runner's placed jobs
 * stay for the sweep.
 */
export function requeueSessionJobs(exec: SqliteExecutor, session: number): readonly JobId[] {
  const jobs = exec
    .prepare(
      `SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id
       WHERE j.session_id = ? AND j.term IS NULL AND j.status IN ('claimed', 'running') ORDER BY j.id`,
    )
    .all(session) as JobRow[];
  const report = emptyReport();
  for (const job of jobs)
    requeueOrFail(exec, job, NO_BACKOFF, report, 'abandoned', sessionEnded(session), false);
  return report.jobsRequeued;
}

/** A give-back whose attempt does not count waits for no backoff; the policy is not read. */
const NO_BACKOFF: RetryPolicy = { backoffBaseMs: 0, backoffMaxMs: 0 };

/**
 * Requeues with backoff, or fails once attempts run out; guarded by the epoch and status observed.
 * Either way the run ended, so its workspace lock is released in the same transaction. A job its
 * runner gave back on shutdown (`attemptCounts` false) goes back at once, its attempt given back.
 */
export function requeueOrFail(
  exec: SqliteExecutor,
  job: JobRow,
  policy: RetryPolicy,
  report: MutableReport,
  lockOutcome: LockOutcome,
  reason: string,
  attemptCounts = true,
): boolean {
  const now = exec.now();
  const { unstarted, givenBack, why } = rescueReason(job, lockOutcome, reason, attemptCounts);
  const base = { at: now, key: job.key, jobId: job.id, session: job.session_id, epoch: job.epoch };
  if (job.attempt < job.attempt_max || givenBack) {
    const attempt = job.attempt - (givenBack ? 1 : 0);
    const changed = exec
      .prepare(
        `UPDATE jobs SET status = 'queued', run_after = ?, session_id = NULL, host = NULL,
           agent_session_id = NULL, attempt = attempt - ${givenBack ? 1 : 0}, pid = NULL, term = NULL,
           lease_until = NULL, reason = ?
         WHERE id = ? AND epoch = ? AND status = ? ${unstarted ? 'AND pid IS NULL' : ''}`,
      )
      .run(
        now + (attemptCounts ? backoffMs(policy, Math.max(1, attempt)) : 0),
        `requeued: ${why}`,
        job.id,
        job.epoch,
        job.status,
      ).changes;
    if (changed === 0) return false;
    report.jobsRequeued.push(job.id);
    appendAudit(exec, { ...base, type: 'job:requeued', detail: { reason: why, attempt } });
    releaseJobLocks(exec, now, job.id, lockOutcome);
  } else {
    const changed = exec
      .prepare(
        `UPDATE jobs SET status = 'failed', finished_at = ?, reason = ?
         WHERE id = ? AND epoch = ? AND status = ?`,
      )
      .run(now, `attempts exhausted: ${why}`, job.id, job.epoch, job.status).changes;
    if (changed === 0) return false;
    report.jobsFailed.push(job.id);
    appendAudit(exec, { ...base, type: 'job:finished', detail: { status: 'failed', reason: why } });
    releaseJobLocks(exec, now, job.id, lockOutcome);
  }
  return true;
}
