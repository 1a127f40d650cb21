/**
 * The two steps a worker repeats on PostgreSQL, as SQL fragments: the guarded finish of a job
 * and the claim of the next one. `jobs.finish` and `jobs.claimNext` run one each;
 * `jobs.finishAndClaimNext` runs both for a batch of workers in one statement
 * (job-loop-batch.ts), so a looping worker pays at most one durable commit per job. Each
 * statement's audit rows come out of one ordered insert.
 */
import { assert } from '../../core/assert.js';
import { FencedError, NotFoundError } from '../../core/errors.js';
import type { Job, JobTransitionResult } from '../../core/job.js';
import type {
  JobClaimNextParams,
  JobFinishAndClaimNextParams,
  JobFinishAndClaimNextResult,
} from '../store.js';
import { batchParams, FINISH_AND_CLAIM_MANY, rowsByRequest, type BatchRow } from './job-loop-batch.js';
import { finishGuard } from '../job-guard.js';
import { deleteLocks, insertAuditRows, lockReleasedRows } from './locks.js';
import { NOW, claimedDetail, hostOf, jobColumns, toJob, type JobRow } from './rows.js';
import type { Outcome } from '../outcome.js';
import type { PgExecutor } from './executor.js';
import { FINISH_TASK_STEP, FINISHED_TASK_JSON } from './task-state.js';
import { claimSet, jobTaskOpen } from './claim-set.js';

/** The parameter references of a finish step. */
interface FinishRefs {
  readonly id: string;
  readonly session: string;
  readonly epoch: string;
  readonly status: string;
  readonly exitCode: string;
  readonly reason: string;
  readonly tail: string;
}

/**
 * CTEs `f` (the finished job, guarded by session, epoch and status), `k` (its workspace locks,
 * deleted) and `ts` (its task, finished when the job ended done).
 */
export const finishSteps = (refs: FinishRefs): string => `f AS (
  UPDATE jobs SET status = ${refs.status}::text, finished_at = ${NOW}, exit_code = ${refs.exitCode}::int,
    reason = ${refs.reason}::text, output_tail = ${refs.tail}::text
  WHERE ${finishGuard({
    ...{ job: 'jobs', id: `${refs.id}::bigint`, session: `${refs.session}::bigint` },
    ...{ epoch: `${refs.epoch}::bigint`, status: `${refs.status}::text`, now: NOW },
  })}
  RETURNING ${jobColumns('jobs')}
), ${deleteLocks('k', 'workspace_locks.job_id = f.id', 'f')}, ${FINISH_TASK_STEP}`;

/** Audit rows of a finish step (parts `part` and `part + 1`), for insertAuditRows. */
export const finishAuditRows = (refs: FinishRefs, part: number): string => `
  SELECT ${part} AS part, ''::text AS seq, f.finished_at AS at, 'job:finished'::text AS type,
    f.key AS task_key, f.id AS job_id, ${refs.session}::bigint AS session_id,
    ${hostOf(`${refs.session}::bigint`)} AS host, ${refs.epoch}::bigint AS epoch,
    jsonb_build_object('status', ${refs.status}::text, 'exitCode', ${refs.exitCode}::int)
      || ${FINISHED_TASK_JSON} AS detail
  FROM f
  UNION ALL
  ${lockReleasedRows(part + 1, 'k', 'f.finished_at', `'released'`, 'f')}`;

/**
 * CTEs of a claim step for session $1, host $2 (null: the session's) and start $3: `seen`, `next`,
 * `s`, `t` and `j` (the claimed job, with `session_host`).
 *
 * An empty poll takes no lock and writes nothing, so it needs no commit record: `seen` reads the
 * session without locking it, and `s` locks it FOR KEY SHARE only once `next` has found (and
 * locked) a job. That lock is what serialises a claim with sessions.end, which takes the session
 * row FOR UPDATE: if the end committed first, `s` waits for it and then reads the ended row
 * (READ COMMITTED re-reads the newest version of a row it had to wait for), so the guard
 * `s.state = 'live'` refuses the claim; if the claim holds the lock first, the end waits until the
 * claim has committed and then sees the job held by the session, as before. `seen` alone decides
 * only when no job was found (or the session was already ended in the snapshot), where a stale
 * answer cannot hand a job to an ended session.
 */
const ONE_CLAIM = { session: 's.id', host: 'coalesce($2::text, s.host)', now: 't.now', start: '$3::boolean' };

const CLAIM_STEPS = `seen AS (
  SELECT id, host, state FROM sessions WHERE id = $1::bigint
),
-- The locking CTE is an optimisation fence (Oban's experience): with the LIMIT subquery written
-- inline in the UPDATE's WHERE, the planner may run it once per candidate row and claim more
-- rows than the LIMIT. A CTE with FOR UPDATE is materialised exactly once.
-- Each candidate's task is looked up by its key, in queue order (jobTaskOpen), and the scan
-- stops at the first it may take.
next AS (
  SELECT jobs.id FROM jobs
  WHERE jobs.status = 'queued' AND jobs.run_after <= ${NOW}
    AND EXISTS (SELECT 1 FROM seen WHERE state = 'live')
    AND ${jobTaskOpen('jobs')}
  ORDER BY jobs.priority, jobs.queued_at, jobs.id
  LIMIT 1
  FOR UPDATE OF jobs SKIP LOCKED
), s AS (
  SELECT id, host, state FROM sessions
  WHERE id = $1::bigint AND EXISTS (SELECT 1 FROM next)
  FOR KEY SHARE
), t AS (
  SELECT ${NOW} AS now
), j AS (
  -- The job by its id as a value, through jobs_pkey; the status guard compares with a value too, so
  -- that jobs_queue's predicate does not match: a generic plan made on a young database otherwise
  -- walked the queue index (joined to next, or probed by id, its third column) once per claim.
  UPDATE jobs SET ${claimSet(ONE_CLAIM)}
  FROM s, t
  WHERE jobs.id = (SELECT id FROM next) AND jobs.status = (SELECT 'queued'::text) AND s.state = 'live'
  RETURNING ${jobColumns('jobs')}, s.host AS session_host
)`;

/** The ledger row of a claim step (part `part`), for insertAuditRows: one, started or not. */
const claimAuditRows = (part: number): string => `
  SELECT ${part} AS part, ''::text AS seq, j.claimed_at AS at, 'job:claimed'::text AS type, j.key AS task_key,
    j.id AS job_id, j.session_id, j.session_host AS host, j.epoch, ${claimedDetail('j', '$3::boolean')} AS detail
  FROM j`;

/** The session's state as the claim step saw it: locked when a job was found, else as read. */
const SESSION_STATE = `(SELECT coalesce(s.state, seen.state)
  FROM (SELECT 1) one LEFT JOIN seen ON true LEFT JOIN s ON true) AS session_state`;

export function liveOrThrow(session: number, state: string | null): void {
  if (state === null) {
    throw new NotFoundError('session', String(session), 'start one with `baton session start`');
  }
  if (state !== 'live') {
    throw new FencedError(`session ${session} is ${state}`, 'start a new session with `baton session start`');
  }
}

/**
 * Takes the best queued job with FOR UPDATE SKIP LOCKED, so concurrent claimers pass over each
 * other's rows instead of queueing behind them, and marks it claimed (or, with `start`, running)
 * in the same statement.
 */
export const CLAIM_NEXT = `WITH ${CLAIM_STEPS}, a AS (${insertAuditRows(claimAuditRows(0))})
  SELECT ${SESSION_STATE}, j.* FROM (SELECT 1) one LEFT JOIN j ON true`;

export async function claimNext(exec: PgExecutor, params: JobClaimNextParams): Promise<Job | null> {
  const row = await exec.one<Partial<JobRow> & { session_state: string | null }>(CLAIM_NEXT, [
    params.session,
    params.host ?? null,
    params.start === true,
  ]);
  assert(row !== undefined, 'claimNext returns exactly one row');
  liveOrThrow(params.session, row.session_state);
  return row.id === undefined || row.id === null ? null : toJob(row as JobRow);
}

/**
 * finishAndClaimNext for a batch of requests (job-loop-batch.ts), each answered as if it had run
 * alone: FencedError or NotFoundError for a session that is not live, else the finish's answer
 * and the claimed job.
 */
export async function finishAndClaimMany(
  exec: PgExecutor,
  reqs: readonly JobFinishAndClaimNextParams[],
  lostOr: (id: number, row: JobRow | undefined) => Promise<JobTransitionResult>,
): Promise<Outcome<JobFinishAndClaimNextResult>[]> {
  const rows = await exec.manyRows<BatchRow>(FINISH_AND_CLAIM_MANY, batchParams(reqs));
  return Promise.all(
    rowsByRequest(rows, reqs.length).map(
      async (mine, index): Promise<Outcome<JobFinishAndClaimNextResult>> => {
        const request = reqs[index];
        assert(request !== undefined && mine.length >= 1, 'finishAndClaimNext answers every request');
        try {
          liveOrThrow(request.session, mine[0]?.session_state ?? null);
          const finished = mine.find((row) => row.step === 'f') as JobRow | undefined;
          const claimed = mine.find((row) => row.step === 'j') as JobRow | undefined;
          const value = {
            finished: await lostOr(request.id, finished),
            next: claimed === undefined ? null : toJob(claimed),
          };
          return { ok: true, value };
        } catch (error) {
          return { ok: false, error };
        }
      },
    ),
  );
}
