/**
 * progress.markTimedOut on PostgreSQL (progress-store.ts). A read first, with no lock, as on
 * SQLite: the job's limit (its own, else the runner's) judged against its `started_at` on the
 * database clock, so a run within its limit or with none writes nothing (no row lock, no WAL).
 * Only a first verdict past the limit takes a transaction: the job locked FOR UPDATE (a finish
 * or another markTimedOut waits, or is waited for), then the same judgement in a second
 * statement, whose fresh snapshot sees a `job:timed_out` another call committed for the epoch,
 * so two calls at once audit it once (decision 0037, "Review fixes").
 */
import type {
  TimedOutBy,
  TimeLimitParams,
  TimeLimitResult,
  TimedOutFinishResult,
} from '../progress-store.js';
import type { JobFinishParams } from '../store.js';
import { timedOutReason } from '../time-limit-reason.js';
import { NOW, hostOf, ms, msInterval, toJob, type JobRow } from './rows.js';
import type { PgExecutor, Querier } from './executor.js';
import { FINISH_SQL, finishValues } from './jobs.js';

const msOf = (expr: string): string => `floor(extract(epoch FROM ${expr}) * 1000)::bigint`;

const JUDGE_SQL = `
WITH j AS (
  SELECT jobs.id, jobs.epoch, jobs.started_at, jobs.time_limit_ms,
    coalesce(jobs.time_limit_ms::bigint, $4::bigint) AS limit_ms, tasks.key
  FROM jobs JOIN tasks ON tasks.id = jobs.task_id
  WHERE jobs.id = $1::bigint AND jobs.session_id = $2::bigint AND jobs.epoch = $3::bigint
    AND jobs.status = 'running' AND jobs.started_at IS NOT NULL
    AND (jobs.lease_until IS NULL OR jobs.lease_until > ${NOW})
), clock AS (
  SELECT ${NOW} AS now
), past AS (
  SELECT j.*, clock.now FROM j CROSS JOIN clock
  WHERE j.limit_ms IS NOT NULL AND j.started_at <= clock.now - ${msInterval('j.limit_ms')}
), already AS (
  SELECT 1 FROM audit_events a JOIN past ON a.task_key = past.key AND a.job_id = past.id
  WHERE a.type = 'job:timed_out' AND a.epoch = past.epoch
)`;

const VERDICT = `
SELECT EXISTS (SELECT 1 FROM j) AS running, (SELECT limit_ms FROM j) AS limit_ms,
  EXISTS (SELECT 1 FROM past) AS past, EXISTS (SELECT 1 FROM already) AS already,
  (SELECT started_at FROM j) AS started_at`;

/** The judgement alone: a plain read. */
const READ_SQL = JUDGE_SQL + VERDICT;

/** The run's job row locked FOR UPDATE, in the transaction that may audit it. */
const LOCK_SQL = `
SELECT 1 FROM jobs WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint
  AND status = 'running' FOR UPDATE`;

/** The judgement again under that lock, and the first verdict past the limit audited; $5 says who judged it. */
const MARK_SQL = `${JUDGE_SQL.trimEnd()}, a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT past.now, 'job:timed_out', past.key, past.id, $2::bigint, ${hostOf('$2::bigint')}, past.epoch,
    jsonb_build_object('startedAt', ${msOf('past.started_at')}, 'limitMs', past.limit_ms,
      'own', past.time_limit_ms IS NOT NULL, 'ranMs', ${msOf('past.now')} - ${msOf('past.started_at')})
      || $5::jsonb
  FROM past WHERE NOT EXISTS (SELECT 1 FROM already)
)${VERDICT}`;

interface LimitRow {
  running: boolean;
  limit_ms: string | number | null;
  past: boolean;
  already: boolean;
  started_at: Date | null;
}

export async function markTimedOut(exec: PgExecutor, params: TimeLimitParams): Promise<TimeLimitResult> {
  const values = [params.id, params.session, params.epoch, params.defaultLimitMs];
  const read = verdictOf(await exec.one<LimitRow>(READ_SQL, values));
  if (!read.timedOut || !read.first) return read;
  return exec.transaction((querier: Querier) => lockAndMark(querier, values, { by: 'runner' }));
}

/**
 * Inside a transaction: the job locked FOR UPDATE, then judged again and its first verdict audited,
 * its row saying who judged it (`by`).
 */
export async function lockAndMark(
  querier: Querier,
  values: readonly unknown[],
  by: TimedOutBy,
): Promise<TimeLimitResult> {
  await querier.rows(LOCK_SQL, values.slice(0, 3));
  return verdictOf((await querier.rows<LimitRow>(MARK_SQL, [...values, JSON.stringify(by)]))[0]);
}

/** Thrown inside the transaction to roll it back: the failing finish did not match. */
class FinishLost extends Error {}

/**
 * progress.failTimedOut: the read first, with no lock (a run within its own limit writes nothing);
 * past it, one transaction: the job locked, the verdict and its `job:timed_out` row, then the
 * failing finish (jobs.finish's own statement), so a crash between them leaves neither.
 */
export async function failTimedOut(exec: PgExecutor, params: JobFinishParams): Promise<TimedOutFinishResult> {
  const values = [params.id, params.session, params.epoch, null];
  const read = verdictOf(await exec.one<LimitRow>(READ_SQL, values));
  if (!read.timedOut) return read;
  try {
    return await exec.transaction(async (querier: Querier): Promise<TimedOutFinishResult> => {
      const verdict = await lockAndMark(querier, values, { by: 'finish' });
      if (!verdict.timedOut) return verdict;
      const reason = timedOutReason(verdict.startedAt, verdict.limitMs, params);
      const [row] = await querier.rows<JobRow>(
        FINISH_SQL,
        finishValues({ ...params, status: 'failed', reason }),
      );
      if (row === undefined) throw new FinishLost();
      return { ...verdict, finished: { ok: true, job: toJob(row) } };
    });
  } catch (error) {
    if (error instanceof FinishLost) return { timedOut: false, reason: 'lost' };
    throw error;
  }
}

function verdictOf(row: LimitRow | undefined): TimeLimitResult {
  if (row === undefined || !row.running || row.started_at === null)
    return { timedOut: false, reason: 'lost' };
  if (row.limit_ms === null) return { timedOut: false, reason: 'none' };
  if (!row.past) return { timedOut: false, reason: 'within' };
  return {
    timedOut: true,
    startedAt: ms(row.started_at),
    limitMs: Number(row.limit_ms),
    first: !row.already,
  };
}
