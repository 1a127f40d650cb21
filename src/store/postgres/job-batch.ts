/**
 * jobs.batch on PostgreSQL: a worker's batch completion and its next batch fetch in one
 * statement, so one commit and one round trip serve up to a thousand jobs, each still guarded by
 * its own epoch and lease and audited in its own ledger rows (docs/decisions/0017):
 *  - `known` says whether every member names a job: a call naming one that does not exist changes
 *    nothing (and answers NotFoundError), as on SQLite, whose transaction that error rolls back;
 *    answering it after the commit once left the call's other work done unseen.
 *  - `s` locks the session FOR KEY SHARE when the batch takes jobs, which serialises the statement
 *    with sessions.end as in claimNext (job-steps.ts); `go` says whether it may finish.
 *  - `x` and `g` give back jobs whose lease has passed (FOR UPDATE SKIP LOCKED, oldest lease
 *    first, at most as many as the batch takes): to the queue, or failed once their attempts are
 *    spent; `gk` drops their workspace locks.
 *  - `f` finishes each member under the shared finish guard (store/job-guard.ts), so a member
 *    that was fenced (moved on, or past its lease) matches nothing and answers `lost` alone, and
 *    one past its own time limit is failed `timed out` (its `job:timed_out` row in `a`); `k`
 *    drops the finished jobs' locks and `ts` finishes the tasks of the jobs that ended done.
 *  - `n` takes up to `take` due jobs through baton_take_queued (migrations 0008, 0012) and `j`
 *    claims and starts them, each with epoch + 1 and the lease.
 *  - `a` writes every ledger row in one ordered insert: member by member its finish (with its
 *    task's move, decision 0023) and lock releases, then each job taken's claim (one row, which
 *    says it started), then the give-backs (a job given back is not visible to this statement's
 *    take: a later batch takes it).
 * A finish and a give-back never meet on one row: the give-back needs the lease passed when `x`
 * read the clock, the finish needs it unpassed when `f` reads it later.
 */
import { assert } from '../../core/assert.js';
import type { Job, JobTransitionResult } from '../../core/job.js';
import { HELD_SQL, finishGuard } from '../job-guard.js';
import { LEASE_EXPIRED } from '../rescue.js';
import type { JobBatchMember, JobBatchParams, JobBatchResult } from '../job-batch.js';
import { deleteLocks, insertAuditRows, seqOf } from './locks.js';
import { NOW, claimedDetail, hostOf, jobFields, msInterval, msOf } from './rows.js';
import { Packed, jobPacked, toJobPacked, type JobPackedRow } from './job-packed.js';
import type { PgExecutor } from './executor.js';
import { FINISH_TASK_STEP, FINISHED_REASON_JSON, FINISHED_TASK_JSON } from './task-state.js';
import { TAKEN_BY_KEY, claimSet } from './claim-set.js';
import { liveOrThrow } from './job-steps.js';
import { timedOutReasonSql } from '../time-limit-reason.js';

/**
 * A member's run past its own time limit at the statement's clock `t` (started_at is set only on a
 * running job, and neither column moves in the finish): it fails `timed out` alone (decision 0037).
 */
const PAST = `(jobs.time_limit_ms IS NOT NULL AND jobs.started_at <= t.now - ${msInterval('jobs.time_limit_ms')})`;

/** A member's guard: its own id, epoch and status, the batch's session. */
const MEMBER = { job: 'jobs', id: 'req.id', session: '$1::bigint', epoch: 'req.epoch', status: 'req.status' };
const TAKE = { session: 's.id', host: 'coalesce($2::text, s.host)', now: 't.now', start: 'true' };

/**
 * The batch's session's host, read once: every member finished (and every task it moved) is the
 * session's own (the finish guard), so its ledger rows need no lookup per row.
 */
const SESSION_HOST = '(SELECT host FROM seen)';

const JOB_BATCH = `WITH seen AS (
  SELECT id, host, state FROM sessions WHERE id = $1::bigint
), known AS (
  -- From the parameter, not from req: a second reference would make req a CTE that the finish's
  -- join then scans once per member (batch-plan.test.ts).
  SELECT NOT EXISTS (
    SELECT 1 FROM unnest($5::bigint[]) AS m (id) WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = m.id)
  ) AS ok
), s AS (
  SELECT id, host, state FROM sessions WHERE id = $1::bigint AND $3::int > 0 AND (SELECT ok FROM known)
  FOR KEY SHARE
), go AS (
  SELECT (SELECT ok FROM known) AND ($3::int = 0 OR EXISTS (SELECT 1 FROM s WHERE state = 'live')) AS ok
), req AS (
  SELECT * FROM unnest($5::bigint[], $6::bigint[], $7::text[], $8::int[], $9::text[], $10::text[])
    WITH ORDINALITY AS r (id, epoch, status, exit_code, reason, tail, ord)
), x AS (
  SELECT id, session_id, status FROM jobs
  WHERE lease_until <= ${NOW} AND status IN ${HELD_SQL} AND EXISTS (SELECT 1 FROM s WHERE state = 'live')
  ORDER BY lease_until, id LIMIT $3::int
  FOR UPDATE SKIP LOCKED
), g AS (
  UPDATE jobs SET
    status = CASE WHEN jobs.attempt < jobs.attempt_max THEN 'queued' ELSE 'failed' END,
    finished_at = CASE WHEN jobs.attempt < jobs.attempt_max THEN NULL ELSE t.now END,
    run_after = CASE WHEN jobs.attempt < jobs.attempt_max THEN t.now ELSE jobs.run_after END,
    session_id = CASE WHEN jobs.attempt < jobs.attempt_max THEN NULL ELSE jobs.session_id END,
    host = CASE WHEN jobs.attempt < jobs.attempt_max THEN NULL ELSE jobs.host END,
    agent_session_id = NULL, pid = NULL, term = NULL,
    lease_until = CASE WHEN jobs.attempt < jobs.attempt_max THEN NULL ELSE jobs.lease_until END,
    reason = CASE WHEN jobs.attempt < jobs.attempt_max THEN 'requeued: ' ELSE 'attempts exhausted: ' END
      || '${LEASE_EXPIRED}'
  FROM x, (SELECT ${NOW} AS now) t
  WHERE jobs.id = x.id AND jobs.status = x.status AND jobs.lease_until <= t.now
  RETURNING jobs.id, jobs.status, jobs.epoch, jobs.attempt, jobs.reason, t.now AS at, x.session_id AS holder,
    (SELECT key FROM tasks WHERE id = jobs.task_id) AS key
), ${deleteLocks('gk', 'workspace_locks.job_id = g.id', 'g')}, f AS (
  UPDATE jobs SET status = CASE WHEN ${PAST} THEN 'failed' ELSE req.status END, finished_at = t.now,
    exit_code = req.exit_code, output_tail = req.tail,
    reason = CASE WHEN ${PAST} THEN ${timedOutReasonSql('jobs', 'req.status', 'req.reason')} ELSE req.reason END
  FROM req, tasks, (SELECT ${NOW} AS now) t
  WHERE ${finishGuard({ ...MEMBER, now: NOW })}
    AND tasks.id = jobs.task_id AND (SELECT ok FROM go)
  RETURNING ${jobFields('jobs')}, req.ord, req.exit_code AS by_exit, tasks.key, ${PAST} AS timed_out
), k AS (
  DELETE FROM workspace_locks USING f WHERE workspace_locks.job_id = f.id
  RETURNING workspace_locks.workspace, workspace_locks.job_id, workspace_locks.session_id,
    workspace_locks.epoch, f.ord, f.finished_at
), ${FINISH_TASK_STEP}, n AS (
  SELECT id, rank FROM baton_take_queued(
    CASE WHEN EXISTS (SELECT 1 FROM s WHERE state = 'live') THEN $3::int ELSE 0 END, ${NOW})
    WITH ORDINALITY AS n (id, rank)
), j AS (
  UPDATE jobs SET ${claimSet({ ...TAKE, lease: `t.now + ${msInterval('$4')}` })}
  FROM n, s, tasks, (SELECT ${NOW} AS now) t
  WHERE jobs.id = n.id AND ${TAKEN_BY_KEY} AND jobs.status = 'queued' AND tasks.id = jobs.task_id AND s.state = 'live'
  RETURNING ${jobFields('jobs')}, jobs.lease_until, n.rank, s.host AS session_host, tasks.key
), a AS (
  ${insertAuditRows(`
    SELECT f.ord * 3 + 1 AS part, ''::text AS seq, f.finished_at AS at, 'job:timed_out'::text AS type,
      f.key AS task_key, f.id AS job_id, f.session_id, ${SESSION_HOST} AS host, f.epoch,
      jsonb_build_object('startedAt', ${msOf('f.started_at')}, 'limitMs', f.time_limit_ms, 'own', true,
        'ranMs', ${msOf('f.finished_at')} - ${msOf('f.started_at')}, 'by', 'finish') AS detail
    FROM f WHERE f.timed_out AND NOT EXISTS (SELECT 1 FROM audit_events e
      WHERE e.task_key = f.key AND e.job_id = f.id AND e.type = 'job:timed_out' AND e.epoch = f.epoch)
    UNION ALL
    SELECT f.ord * 3 + 2 AS part, ''::text AS seq, f.finished_at AS at, 'job:finished'::text AS type,
      f.key AS task_key, f.id AS job_id, f.session_id, ${SESSION_HOST} AS host, f.epoch,
      jsonb_build_object('status', f.status, 'exitCode', f.by_exit) || ${FINISHED_TASK_JSON}
        || ${FINISHED_REASON_JSON} AS detail
    FROM f
    UNION ALL
    SELECT k.ord * 3 + 3, k.workspace::text, k.finished_at, 'lock:released', f.key, k.job_id,
      k.session_id, ${hostOf('k.session_id')}, k.epoch,
      jsonb_build_object('workspace', k.workspace, 'outcome', 'released')
    FROM k JOIN f ON f.id = k.job_id
    UNION ALL
    SELECT 10000000 + j.rank, '', j.claimed_at, 'job:claimed', j.key, j.id, j.session_id,
      j.session_host, j.epoch, ${claimedDetail('j', 'true')}
    FROM j
    UNION ALL
    SELECT 20000000 AS part, ${seqOf('g.id')} AS seq, g.at, CASE WHEN g.status = 'queued' THEN 'job:requeued'
      ELSE 'job:finished' END AS type, g.key AS task_key, g.id AS job_id, g.holder AS session_id,
      ${hostOf('g.holder')} AS host, g.epoch,
      CASE WHEN g.status = 'queued' THEN jsonb_build_object('reason', '${LEASE_EXPIRED}', 'attempt', g.attempt)
        ELSE jsonb_build_object('status', 'failed', 'reason', '${LEASE_EXPIRED}') END AS detail
    FROM g
    UNION ALL
    SELECT 20000000, ${seqOf('g.id')} || ' ' || gk.workspace, g.at, 'lock:released', g.key, gk.job_id,
      gk.session_id, ${hostOf('gk.session_id')}, gk.epoch,
      jsonb_build_object('workspace', gk.workspace, 'outcome', 'released')
    FROM gk JOIN g ON g.id = gk.job_id`)}
)
SELECT coalesce((SELECT state FROM s), seen.state) AS session_state, y.*
FROM (SELECT 1) one LEFT JOIN seen ON true LEFT JOIN (
  SELECT 'f' AS step, ${jobPacked('f', ['f.ord', 'NULL'], 'f.key')}, f.timed_out FROM f
  UNION ALL
  SELECT 'j', ${jobPacked('j', ['j.rank', msOf('j.lease_until')], 'j.key')}, false FROM j
) y ON true`;

/**
 * A row of the answer: the session's state, then a member finished (`f`) or a job taken (`j`), its
 * numbers packed (job-packed.ts) after two of the statement's own: the member's ordinal or the
 * job's rank, and the lease (taken jobs only). A batch that finished and took nothing has one row.
 */
type BatchRow = Partial<JobPackedRow> & {
  session_state: string | null;
  step: 'f' | 'j' | null;
  timed_out: boolean | null;
};
/**
 * An array of integers (or nulls) as PostgreSQL's array text, built in one join: pg's own encoding
 * escapes element by element, and a batch sends up to three such arrays of 1,000.
 */
const intArray = (values: readonly (number | null)[]): string =>
  `{${values.map((value) => (value === null ? 'NULL' : String(value))).join(',')}}`;

/** A member the statement finished; `timedOut` only on one failed past its own time limit. */
function finishedMember(job: Job, timedOut: boolean | null): JobBatchMember {
  return timedOut === true ? { ok: true, job, timedOut: true } : { ok: true, job };
}

/**
 * jobs.batch: runs the statement and answers each member as jobs.finish would; `lost` reads a
 * member the statement did not finish as it is now.
 */
export async function jobBatch(
  exec: PgExecutor,
  params: JobBatchParams,
  lost: (id: number) => Promise<JobTransitionResult>,
  took: (count: number) => void,
): Promise<JobBatchResult> {
  const finish = params.finish ?? [];
  const take = params.take ?? 0;
  const col = <T>(pick: (member: (typeof finish)[number]) => T): T[] => finish.map(pick);
  const rows = await exec.manyRows<BatchRow>(
    JOB_BATCH,
    [
      params.session,
      params.host ?? null,
      take,
      params.leaseMs ?? 0,
      intArray(col((member) => member.id)),
      intArray(col((member) => member.epoch)),
      col((member) => member.status),
      intArray(col((member) => member.exitCode ?? null)),
      col((member) => member.reason ?? null),
      col((member) => member.outputTail ?? null),
    ],
    'per call',
  );
  assert(rows.length >= 1, 'jobs.batch answers at least one row');
  if (take > 0) liveOrThrow(params.session, rows[0]?.session_state ?? null);
  const done = new Map<number, JobBatchMember>();
  const taken: { rank: number; job: Job }[] = [];
  let leaseUntil: number | null = null;
  for (const row of rows) {
    if (row.step === null) continue;
    const numbers = new Packed((row as JobPackedRow).nums);
    const ord = numbers.required();
    const lease = numbers.next();
    const job = toJobPacked(row as JobPackedRow, numbers);
    if (row.step === 'f') done.set(ord, finishedMember(job, row.timed_out));
    else {
      taken.push({ rank: ord, job });
      leaseUntil = lease;
    }
  }
  taken.sort((left, right) => left.rank - right.rank);
  took(taken.length);
  const finished = await Promise.all(
    finish.map((member, index): Promise<JobBatchMember> => {
      const answer = done.get(index + 1);
      return answer === undefined ? lost(member.id) : Promise.resolve(answer);
    }),
  );
  return { finished, taken: taken.map((entry) => entry.job), leaseUntil };
}
