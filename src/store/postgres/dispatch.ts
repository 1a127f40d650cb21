/**
 * The runner's assignments, the dispatcher's waiting and skipped jobs, and rescue of stale
 * sessions, on PostgreSQL; placement itself is in placement.ts.
 *
 * Lock order: the lease row, then the job row; rescue takes a session row, then its claim rows,
 * then their task rows (the kernel's order), then its workspace lock rows.
 */
import type { DispatchStore, JobAttachParams, JobRequeueParams, JobSkipParams } from '../dispatch-store.js';
import type { JobTransitionResult } from '../../core/job.js';
import { emptyReport, LEASE_EXPIRED, orphanReason, type OrphanFacts } from '../rescue.js';
import { jobById } from './jobs.js';
import { releaseSessionHoldings } from './locks.js';
import { postgresDispatchPass } from './dispatch-pass.js';
import { requeueOrFail } from './requeue.js';
import { LIVE_TERM, termParams } from './placement.js';
import { NOW, atMs, hostOf, jobColumns, jobFields, ms, msInterval, toJob, type JobRow } from './rows.js';
import type { TaskGate } from '../../core/task.js';
import type { PgExecutor } from './executor.js';

/** `took` counts the jobs taken from the queue, for the queue's upkeep (upkeep.ts). */
export function postgresDispatch(exec: PgExecutor, took: (count: number) => void): DispatchStore['dispatch'] {
  return {
    queued: async (params) =>
      (
        await exec.rows<JobRow & { gate: TaskGate | null }>(
          `SELECT ${jobFields('jobs')}, t.key, t.gate FROM jobs JOIN tasks t ON t.id = jobs.task_id
           WHERE jobs.status = 'queued' AND jobs.run_after <= ${NOW} AND t.state = 'open'
           ORDER BY jobs.priority, jobs.queued_at, jobs.id LIMIT $1::int`,
          [params.limit],
        )
      ).map((row) => ({ ...toJob(row), gate: row.gate })),
    ...postgresDispatchPass(exec, took),
    markWaiting: (params) => markWaiting(exec, params),
    skip: (params) => skipJob(exec, params),
    assigned: async (session) =>
      (
        await exec.rows<JobRow>(
          `SELECT ${jobColumns('jobs')} FROM jobs
           WHERE session_id = $1::bigint AND status = 'claimed' ORDER BY id`,
          [session],
        )
      ).map(toJob),
    attach: (params) => attachAgent(exec, params),
    requeue: (params) => requeueJob(exec, params),
  };
}

/** dispatch.markWaiting: one statement under the live term. */
async function markWaiting(
  exec: PgExecutor,
  params: Parameters<DispatchStore['dispatch']['markWaiting']>[0],
): Promise<boolean> {
  const [row] = await exec.rows<{ marked: number }>(
    `WITH ${LIVE_TERM}, j AS (
           UPDATE jobs SET reason = $5::text
           FROM l WHERE jobs.id = $4::bigint AND jobs.status = 'queued'
           RETURNING jobs.id
         )
         SELECT count(*) AS marked FROM j`,
    [...termParams(params.term), params.id, params.reason],
  );
  return row?.marked === 1;
}

/** dispatch.skip: one statement under the live term, audited only when the reason changes. */
async function skipJob(exec: PgExecutor, params: JobSkipParams): Promise<boolean> {
  // The job row is locked (after the lease, through `l`) to read the reason it had, so the
  // ledger row is written only when the reason changes.
  const [row] = await exec.rows<{ skipped: number }>(
    `WITH ${LIVE_TERM}, o AS (
           SELECT id, reason FROM jobs
           WHERE id = $4::bigint AND status = 'queued' AND EXISTS (SELECT 1 FROM l)
           FOR UPDATE
         ), j AS (
           UPDATE jobs SET reason = $5::text, run_after = ${NOW} + ${msInterval('$6')}
           FROM o WHERE jobs.id = o.id AND jobs.status = 'queued'
           RETURNING jobs.id, jobs.task_id, jobs.run_after, o.reason AS old_reason
         ), a AS (
           INSERT INTO audit_events (at, type, task_key, job_id, detail)
           SELECT run_after - ${msInterval('$6')}, 'job:skipped',
             (SELECT key FROM tasks WHERE id = j.task_id), id, $7::jsonb
           FROM j WHERE old_reason IS DISTINCT FROM $5::text
         )
         SELECT count(*) AS skipped FROM j`,
    [...termParams(params.term), params.id, params.reason, params.backoffMs, JSON.stringify(params.detail)],
  );
  return row?.skipped === 1;
}

/** dispatch.attach: one statement, with its `job:spawned` row. */
async function attachAgent(exec: PgExecutor, params: JobAttachParams): Promise<JobTransitionResult> {
  const row = await exec.one<JobRow>(
    `WITH j AS (
           UPDATE jobs SET agent_session_id = $4::bigint, pid = $5::int
           WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint
             AND status = 'running'
           RETURNING ${jobColumns('jobs')}
         ), a AS (
           INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
           SELECT ${NOW}, 'job:spawned', key, id, $4::bigint, ${hostOf('$4::bigint')}, $3::bigint,
             jsonb_build_object('pid', $5::int, 'runner', $2::bigint)
           FROM j
         )
         SELECT * FROM j`,
    [params.id, params.session, params.epoch, params.agentSession, params.pid],
  );
  if (row === undefined) return { ok: false, reason: 'lost', job: await jobById(exec, params.id) };
  return { ok: true, job: toJob(row) };
}

/** dispatch.requeue: the job read under its guard, then given back or failed (requeueOrFail). */
async function requeueJob(exec: PgExecutor, params: JobRequeueParams): Promise<JobTransitionResult> {
  // A rare path (an agent crashed): read the job under (session, epoch), choose requeue or
  // fail and the backoff from what was read, then write guarded by the epoch and status read.
  const job = await exec.one<JobRow>(
    `SELECT ${jobColumns('jobs')} FROM jobs
         WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint
           AND status IN ('claimed', 'running')`,
    [params.id, params.session, params.epoch],
  );
  const done =
    job === undefined
      ? null
      : await requeueOrFail(exec, job, params.policy, 'released', params.reason, params.attemptCounts);
  if (done === null) return { ok: false, reason: 'lost', job: await jobById(exec, params.id) };
  return { ok: true, job: toJob(done.row) };
}

export function postgresRecovery(exec: PgExecutor): DispatchStore['recovery'] {
  return {
    rescueStale: async (params) => {
      const report = emptyReport();
      const limit = params.limit ?? 100;
      const candidates = await exec.rows<{ id: number; heartbeat_at: Date }>(
        `SELECT id, heartbeat_at FROM sessions
         WHERE state = 'live' AND heartbeat_at < ${NOW} - ${msInterval('coalesce(ttl_ms, $1::bigint)')}
         ORDER BY id LIMIT $2::int`,
        [params.staleAfterMs, limit],
      );
      // One transaction per session, guarded by the heartbeat it observed; then one statement
      // per orphaned job, guarded by the epoch and status it observed. Counted once committed.
      for (const candidate of candidates) {
        const released = await rescueSession(exec, candidate.id, ms(candidate.heartbeat_at));
        if (released === null) continue;
        report.sessions.push(candidate.id);
        report.claimsReleased += released.claims;
        report.locksReleased += released.locks;
      }
      for (const job of await orphanedJobs(exec, limit)) {
        const reason = job.lease_passed ? LEASE_EXPIRED : orphanReason(job);
        const done = await requeueOrFail(exec, job, params.policy, 'recovered', reason);
        if (done?.outcome === 'requeued') report.jobsRequeued.push(job.id);
        if (done?.outcome === 'failed') report.jobsFailed.push(job.id);
      }
      return report;
    },
  };
}

/**
 * Marks the session stale (end_reason `rescued`, in the same UPDATE) if it is still live with the
 * heartbeat observed, then releases its claims and workspace locks as `recovered`; the numbers
 * released, or null when the session had moved on.
 *
 * Two statements in one transaction, as in sessions.end. The first locks the session row FOR
 * UPDATE, which conflicts with the FOR KEY SHARE a claim takes on its session (a plain UPDATE of
 * the state would not), so every claim that saw the session live has committed by then and every
 * later one waits and then reads it stale; a lock grant (acquire, or a locking placement) takes
 * the same FOR KEY SHARE on its session, so the same holds for locks. The release needs the second statement's fresh
 * snapshot, which sees those claims; the first statement's snapshot predates the lock wait. Of
 * two sweeps racing, the second waits for the lock and then reads the session as stale.
 */
async function rescueSession(
  exec: PgExecutor,
  id: number,
  heartbeatMs: number,
): Promise<{ claims: number; locks: number } | null> {
  return exec.transaction(async (transaction) => {
    const [marked] = await transaction.rows<{ marked: number }>(
      `WITH l AS (
         SELECT id, state, heartbeat_at FROM sessions WHERE id = $1::bigint FOR UPDATE
       ), u AS (
         UPDATE sessions s SET state = 'stale', ended_at = ${NOW}, end_reason = 'rescued'
         FROM l
         WHERE s.id = l.id AND l.state = 'live' AND l.heartbeat_at = ${atMs('$2')}
         RETURNING s.id, s.host, s.ended_at
       ), a AS (
         INSERT INTO audit_events (at, type, session_id, host, detail)
         SELECT ended_at, 'session:stale', id, host, jsonb_build_object('heartbeatAt', $2::bigint)
         FROM u
       )
       SELECT count(*) AS marked FROM u`,
      [id, heartbeatMs],
    );
    if (marked?.marked !== 1) return null;
    const [released] = await transaction.rows<{ claims: number; locks: number }>(
      releaseSessionHoldings('recovered'),
      [id],
    );
    return { claims: released?.claims ?? 0, locks: released?.locks ?? 0 };
  });
}

/**
 * Active jobs whose runner or agent session is no longer live (stale, or ended without finishing
 * them), or whose lease has passed while their session lives on (a pull worker that died and was
 * restarted under the same session, or one that kept beating and never finished): `lease_passed`
 * says which. Read after this sweep's sessions committed, so it sees them. The active jobs are
 * read first, through their partial index (a MATERIALIZED CTE): left to itself, the planner walked
 * the whole table in id order for the LIMIT, finished history included, on every sweep.
 * With what the reason tells (rescue.ts orphanReason), read for the chosen rows alone: whether the
 * runner's session is live, and the agent session's last claim of the task (by task, then
 * session: a claim's epoch is the task's, not the job's).
 */
export const ORPHANED_JOBS = `
  WITH j AS MATERIALIZED (SELECT * FROM jobs WHERE status IN ('claimed', 'running')),
  o AS (
    SELECT * FROM j
    WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.session_id AND s.state <> 'live')
      OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.agent_session_id AND s.state <> 'live')
      OR j.lease_until <= ${NOW}
    ORDER BY j.id LIMIT $1::int)
  SELECT ${jobColumns('o')}, coalesce(o.lease_until <= ${NOW}, false) AS lease_passed,
    (SELECT r.state = 'live' FROM sessions r WHERE r.id = o.session_id) AS runner_live,
    c.epoch AS claim_epoch, c.outcome AS claim_outcome
  FROM o LEFT JOIN LATERAL (
    SELECT l.epoch, l.outcome FROM claims l
    WHERE l.task_id = o.task_id AND l.session_id = o.agent_session_id
    ORDER BY l.epoch DESC LIMIT 1) c ON true
  ORDER BY o.id`;

type OrphanRow = JobRow & OrphanFacts & { lease_passed: boolean };

async function orphanedJobs(exec: PgExecutor, limit: number): Promise<OrphanRow[]> {
  return exec.rows<OrphanRow>(ORPHANED_JOBS, [limit]);
}
