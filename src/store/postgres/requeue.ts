/**
 * The give-back of a job on PostgreSQL: by its runner (dispatch.requeue), by the sweep
 * (recovery.rescueStale), and by the end of the session that held it in pull mode (sessions.end,
 * inside its transaction).
 */
import type { JobId } from '../../core/job.js';
import { backoffMs, type RetryPolicy } from '../../core/retry.js';
import type { LockOutcome } from '../../core/workspace-lock.js';
import { rescueReason, sessionEnded } from '../rescue.js';
import type { Querier } from './executor.js';
import { deleteLocks, insertAuditRows, lockReleasedRows } from './locks.js';
import { NOW, hostOf, jobColumns, msInterval, type JobRow } from './rows.js';

/**
 * sessions.end's give-back of the jobs the session took in pull mode (claimNext, jobs.batch: no
 * dispatcher term), each at once with its attempt given back, as a runner's on a graceful
 * shutdown: the worker let go, nothing failed; answers the ids queued again. Called once the
 * session row is locked and marked ended, so every claim that saw it live has committed and is
 * seen here. A late finish by the old holder meets a queued job (then the next claim's epoch) and
 * is refused. A runner's placed jobs stay for the sweep.
 */
export async function requeueSessionJobs(querier: Querier, session: number): Promise<readonly JobId[]> {
  const jobs = await querier.rows<JobRow>(
    `SELECT ${jobColumns('jobs')} FROM jobs
     WHERE session_id = $1::bigint AND term IS NULL AND status IN ('claimed', 'running') ORDER BY id`,
    [session],
  );
  const requeued: JobId[] = [];
  for (const job of jobs) {
    const moved = await requeueOrFail(querier, job, NO_BACKOFF, 'abandoned', sessionEnded(session), false);
    if (moved?.outcome === 'requeued') requeued.push(job.id);
  }
  return requeued;
}

/** A give-back whose attempt does not count waits for no backoff; the policy is not read. */
const NO_BACKOFF: RetryPolicy = { backoffBaseMs: 0, backoffMaxMs: 0 };

/**
 * Requeues the job with backoff, or fails it once its attempts ran out, with the audit row in
 * the same statement; the job as written, or null when it had moved. Guarded by the epoch,
 * status and runner session observed: a job that moved since (finished by its runner, or
 * rescued by another sweep) is re-checked on its newest version after the row-lock wait and
 * matches nothing. The backoff is core/retry.ts's, for the attempt observed; none for a job its
 * runner gave back on shutdown (`attemptCounts` false), whose attempt is given back.
 */
export async function requeueOrFail(
  exec: Querier,
  job: JobRow,
  policy: RetryPolicy,
  lockOutcome: LockOutcome,
  reason: string,
  attemptCounts = true,
): Promise<{ outcome: 'requeued' | 'failed'; row: JobRow } | null> {
  const { unstarted, givenBack, why } = rescueReason(job, lockOutcome, reason, attemptCounts);
  // $1 id, $2 epoch, $3 status, $4 observed runner session, $5 why, $6 the lock's outcome
  const guard = [job.id, job.epoch, job.status, job.session_id, why, lockOutcome];
  const where = `id = $1::bigint AND epoch = $2::bigint AND status = $3::text
         AND session_id IS NOT DISTINCT FROM $4::bigint`;
  // The run ended either way: its workspace lock goes in the same statement.
  const locks = deleteLocks('k', 'workspace_locks.job_id = j.id', 'j');
  /** The job's ledger row, then its lock's; `at` names the columns of `j` qualified. */
  const audit = (at: string, type: string, detail: string): string =>
    insertAuditRows(`
         SELECT 0 AS part, ''::text AS seq, ${at} AS at, '${type}'::text AS type, key AS task_key,
           id AS job_id, $4::bigint AS session_id, ${hostOf('$4::bigint')} AS host, epoch,
           ${detail} AS detail
         FROM j
         UNION ALL
         ${lockReleasedRows(1, 'k', at, '$6::text', 'j')}`);
  if (job.attempt < job.attempt_max || givenBack) {
    const attempt = job.attempt - (givenBack ? 1 : 0);
    const [row] = await exec.rows<JobRow>(
      `WITH j AS (
         UPDATE jobs SET status = 'queued', run_after = ${NOW} + ${msInterval('$7')},
           session_id = NULL, host = NULL, agent_session_id = NULL, pid = NULL, term = NULL,
           lease_until = NULL, attempt = attempt - ${givenBack ? 1 : 0},
           reason = 'requeued: ' || $5::text
         WHERE ${where} ${unstarted ? 'AND pid IS NULL' : ''}
         RETURNING ${jobColumns('jobs')}
       ), ${locks}, a AS (
         ${audit(
           `j.run_after - ${msInterval('$7')}`,
           'job:requeued',
           `jsonb_build_object('reason', $5::text, 'attempt', attempt)`,
         )}
       )
       SELECT * FROM j`,
      [...guard, attemptCounts ? backoffMs(policy, Math.max(1, attempt)) : 0],
    );
    return row === undefined ? null : { outcome: 'requeued', row };
  }
  const [row] = await exec.rows<JobRow>(
    `WITH j AS (
       UPDATE jobs SET status = 'failed', finished_at = ${NOW},
         reason = 'attempts exhausted: ' || $5::text
       WHERE ${where}
       RETURNING ${jobColumns('jobs')}
     ), ${locks}, a AS (
       ${audit('j.finished_at', 'job:finished', `jsonb_build_object('status', 'failed', 'reason', $5::text)`)}
     )
     SELECT * FROM j`,
    guard,
  );
  return row === undefined ? null : { outcome: 'failed', row };
}
