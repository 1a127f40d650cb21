/**
 * The two steps a worker repeats on PostgreSQL, as SQL fragments: the guarded finish of a job
 * and the claim of the next one. `jobs.finish` and `jobs.claimNext` run one each;
 * `jobs.finishAndClaimNext` runs both for a batch of workers in one statement
 * (job-loop-batch.ts), so a looping worker pays at most one durable commit per job. Each
 * statement's audit rows come out of one ordered insert.
 */
import { assert } from '../../core/assert.js';
import { FencedError, NotFoundError } from '../../core/errors.js';
import type { Job, JobId, JobTransitionResult } from '../../core/job.js';
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
import { FINISH_TASK_STEP, FINISHED_REASON_JSON, FINISHED_TASK_JSON } from './task-state.js';
import { claimSet, jobTaskOpen } from './claim-set.js';
import { HAND_OFF_NOT_TAKEN } from '../hand-off.js';

/** The parameter references of a finish step. */
interface FinishRefs {
  readonly id: string;
  readonly session: string;
  readonly epoch: string;
  readonly status: string;
  readonly exitCode: string;
  readonly reason: string;
  readonly tail: string;
  /** A jsonb expression added to the `job:finished` row's detail (who ended it: the leader's sweep). */
  readonly detail?: string | undefined;
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

/** A finish's extra `job:finished` detail, none for the usual one (its SQL text unchanged). */
const moreDetail = (refs: FinishRefs): string => (refs.detail === undefined ? '' : ` || ${refs.detail}`);

/** Audit rows of a finish step (parts `part` and `part + 1`), for insertAuditRows. */
export const finishAuditRows = (refs: FinishRefs, part: number): string => `
  SELECT ${part} AS part, ''::text AS seq, f.finished_at AS at, 'job:finished'::text AS type,
    f.key AS task_key, f.id AS job_id, ${refs.session}::bigint AS session_id,
    ${hostOf(`${refs.session}::bigint`)} AS host, ${refs.epoch}::bigint AS epoch,
    jsonb_build_object('status', ${refs.status}::text, 'exitCode', ${refs.exitCode}::int)
      || ${FINISHED_TASK_JSON} || ${FINISHED_REASON_JSON}${moreDetail(refs)} AS detail
  FROM f
  UNION ALL
  ${lockReleasedRows(part + 1, 'k', 'f.finished_at', `'released'`, 'f')}`;

/**
 * CTEs of a claim step for session $1, host $2 (null: the session's), start $3 and wait $4 (ms;
 * null: no wait): `seen`, `h`, `next`, `s`, `t`, `j`, `r`, `got` (the job claimed, with
 * `session_host` and `recovered`) and `w` (the session's wait mark).
 *
 * An empty poll without a wait takes no lock and writes nothing, so it needs no commit record:
 * `seen` reads the session without locking it, and `s` locks it FOR KEY SHARE only once `next`
 * has found (and locked) a job. That lock is what serialises a claim with sessions.end, which
 * takes the session row FOR UPDATE: if the end committed first, `s` waits for it and then reads
 * the ended row (READ COMMITTED re-reads the newest version of a row it had to wait for), so the
 * guard `s.state = 'live'` refuses the claim; if the claim holds the lock first, the end waits
 * until the claim has committed and then sees the job held by the session, as before. `seen`
 * alone decides only when no job was found (or the session was already ended in the snapshot),
 * where a stale answer cannot hand a job to an ended session.
 *
 * Hand-off (docs/decisions/0024): `h` is a job an enqueue handed to the session that the session
 * never took (store/hand-off.ts); `r` gives it back and claims it again under a new epoch, in this
 * one step and before any queued job (its attempt kept: it was never started by this claim).
 * `w` clears `handed_job` only if it still names what `seen` read: a hand-off committed while
 * this statement ran is left for the next call (`pending`), never wiped. With a wait and no job,
 * `w` marks the session waiting until now + $4 ms.
 */
const ONE_CLAIM = { session: 's.id', host: 'coalesce($2::text, s.host)', now: 't.now', start: '$3::boolean' };

/** A wait mark is written again only once less than half of the wait asked for is left of it. */
const MARK_STALE = `sessions.wait_until < t.now + $4::int * interval '0.5 millisecond'
      OR sessions.wait_host IS DISTINCT FROM $2::text OR sessions.wait_start <> $3::boolean`;

const CLAIM_STEPS = `seen AS (
  SELECT id, host, state, handed_job FROM sessions WHERE id = $1::bigint
), sl AS (
  -- Only when the snapshot saw a hand-off: the session locked and read as it is now, so that two
  -- claims for one session never both take it (the second reads it cleared).
  SELECT handed_job FROM sessions
  WHERE id = $1::bigint AND state = 'live' AND (SELECT handed_job FROM seen) IS NOT NULL
  FOR NO KEY UPDATE
), h AS (
  -- $5: null unless this store waited for the session; then the newest job it gave it, so that a
  -- hand-off it gave already is not given twice, and one it did not is taken as handed (waited).
  SELECT jobs.id, $5::bigint IS NOT NULL AS waited, ${jobTaskOpen('jobs')} AS open FROM jobs
  -- Only the hand-off the snapshot saw, still there: a newer one may not be in the snapshot yet
  -- (it is left, and reported pending).
  WHERE jobs.id = (SELECT handed_job FROM sl WHERE handed_job = (SELECT handed_job FROM seen))
    AND jobs.session_id = $1::bigint
    AND jobs.status IN ('claimed', 'running') AND jobs.id > coalesce($5::bigint, 0)
  FOR UPDATE OF jobs
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
    AND NOT EXISTS (SELECT 1 FROM h WHERE waited OR open)
    AND ${jobTaskOpen('jobs')}
  ORDER BY jobs.priority, jobs.queued_at, jobs.id
  LIMIT 1
  FOR UPDATE OF jobs SKIP LOCKED
), s AS (
  SELECT id, host, state FROM sessions
  WHERE id = $1::bigint AND (EXISTS (SELECT 1 FROM next) OR EXISTS (SELECT 1 FROM h))
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
  RETURNING ${jobColumns('jobs')}, s.host AS session_host, 'claimed'::text AS how
), r AS (
  -- Given back and claimed again in one step, its attempt kept: the hand-off's was never used.
  UPDATE jobs SET ${claimSet({ ...ONE_CLAIM, attempt: 'jobs.attempt' })}
  FROM s, t
  WHERE jobs.id = (SELECT id FROM h WHERE NOT waited AND open) AND jobs.session_id = s.id
    AND s.state = 'live'
  RETURNING ${jobColumns('jobs')}, s.host AS session_host, 'recovered'::text AS how
), back AS (
  -- Its task takes no jobs now (a gate came): only given back, to wait in the queue.
  UPDATE jobs SET status = 'queued', run_after = t.now, attempt = jobs.attempt - 1, session_id = NULL,
    host = NULL, claimed_at = NULL, started_at = NULL, agent_session_id = NULL, pid = NULL,
    term = NULL, lease_until = NULL, reason = 'requeued: ${HAND_OFF_NOT_TAKEN}'
  FROM s, t
  WHERE jobs.id = (SELECT id FROM h WHERE NOT waited AND NOT open) AND jobs.session_id = s.id
    AND s.state = 'live'
  RETURNING ${jobColumns('jobs')}, s.host AS session_host, 'given back'::text AS how
), kept AS (
  SELECT ${jobColumns('jobs')}, s.host AS session_host, 'kept'::text AS how
  FROM jobs, s WHERE jobs.id = (SELECT id FROM h WHERE waited) AND s.state = 'live'
), got AS (
  SELECT * FROM j UNION ALL SELECT * FROM r UNION ALL SELECT * FROM kept
), w AS (
  UPDATE sessions SET
    handed_job = CASE WHEN sessions.handed_job IS NOT DISTINCT FROM (SELECT handed_job FROM seen)
      THEN NULL ELSE sessions.handed_job END,
    wait_until = CASE WHEN $4::int IS NULL OR EXISTS (SELECT 1 FROM got) THEN NULL
      ELSE t.now + $4::int * interval '1 millisecond' END,
    wait_host = $2::text, wait_start = $3::boolean
  FROM t
  WHERE sessions.id = $1::bigint AND sessions.state = 'live'
    AND (sessions.handed_job IS NOT NULL OR CASE
      WHEN $4::int IS NULL OR EXISTS (SELECT 1 FROM got) THEN sessions.wait_until IS NOT NULL
      ELSE sessions.wait_until IS NULL OR ${MARK_STALE} END)
  RETURNING sessions.handed_job
)`;

/**
 * The ledger rows of a claim step, for insertAuditRows: one `job:claimed`, started or not. A
 * hand-off taken back (`recovered`) is given back to the queue and claimed again in the one step,
 * so it has the `job:requeued` row of the first before it (parts 0 and 1); one only given back
 * has that row alone. A hand-off taken as handed (`kept`) has its row already, the enqueue's.
 */
const CLAIM_AUDIT_ROWS = `
  SELECT 0 AS part, ''::text AS seq, t.now AS at, 'job:requeued'::text AS type,
    x.key AS task_key, x.id AS job_id, $1::bigint AS session_id, x.session_host AS host,
    x.epoch - (x.how = 'recovered')::int AS epoch,
    jsonb_build_object('reason', '${HAND_OFF_NOT_TAKEN}', 'attempt', x.attempt - (x.how = 'recovered')::int)
      AS detail
  FROM (SELECT * FROM r UNION ALL SELECT * FROM back) x, t
  UNION ALL
  SELECT 1, '', got.claimed_at, 'job:claimed', got.key, got.id, got.session_id, got.session_host, got.epoch,
    ${claimedDetail('got', '$3::boolean')}
      || CASE WHEN got.how = 'recovered' THEN '{"recovered": true}'::jsonb ELSE '{}'::jsonb END
  FROM got WHERE got.how <> 'kept'`;

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
export const CLAIM_NEXT = `WITH ${CLAIM_STEPS}, a AS (${insertAuditRows(CLAIM_AUDIT_ROWS)})
  SELECT ${SESSION_STATE}, (SELECT handed_job FROM w) AS pending, got.*
  FROM (SELECT 1) one LEFT JOIN got ON true`;

/** The claim statement of claimNext (store/hand-off.ts runs it): the job, and whether a hand-off waits. */
export async function claimNext(
  exec: PgExecutor,
  params: JobClaimNextParams,
  known: JobId | null,
): Promise<{ job: Job | null; pending: boolean }> {
  const row = await exec.one<
    Partial<JobRow> & { session_state: string | null; pending: string | number | null }
  >(CLAIM_NEXT, [params.session, params.host ?? null, params.start === true, params.waitMs ?? null, known]);
  assert(row !== undefined, 'claimNext returns exactly one row');
  liveOrThrow(params.session, row.session_state);
  const job = row.id === undefined || row.id === null ? null : toJob(row as JobRow);
  return { job, pending: row.pending !== null };
}

/**
 * Takes the job handed to the live session, newer than `known` (store/hand-off.ts): clears
 * `handed_job` where it names a job the session holds, and answers that job; nothing when there is
 * none, or when the job is not in this statement's snapshot yet (the claim statement that follows
 * sees it). The commit is not waited to disk (`synchronous_commit` off for it): a take lost in a
 * crash leaves the job handed again, which any other claim takes back under a new epoch.
 */
const TAKE_HAND_OFF = `WITH quick AS (
  SELECT set_config('synchronous_commit', 'off', true) AS v
), taken AS (
  -- One UPDATE joined to the job: a session another taker cleared meanwhile is re-read (READ
  -- COMMITTED) and no longer matches; a job not in the snapshot yet matches nothing.
  UPDATE sessions SET handed_job = NULL
  FROM jobs
  WHERE sessions.id = $1::bigint AND sessions.state = 'live' AND sessions.handed_job > $2::bigint
    AND jobs.id = sessions.handed_job AND jobs.session_id = $1::bigint
    AND jobs.status IN ('claimed', 'running') AND (SELECT v FROM quick) IS NOT NULL
  RETURNING ${jobColumns('jobs')}
)
SELECT * FROM taken`;

export async function takeHandOff(exec: PgExecutor, session: number, known: number): Promise<Job | null> {
  const row = await exec.one<JobRow>(TAKE_HAND_OFF, [session, known]);
  return row === undefined ? null : toJob(row);
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
