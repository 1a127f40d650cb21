/**
 * Term-fenced placement, the runner's assignments, and rescue of stale sessions, on PostgreSQL.
 *
 * Placement is fenced by the dispatcher's lease term and serialised against a takeover of the
 * lease: the statement locks the live lease row FOR SHARE before it touches the job. A lease
 * acquire locks that row FOR UPDATE (and renew and resign UPDATE it), which conflicts with FOR
 * SHARE, so a takeover either committed before our lock (we then read the new term and are
 * fenced) or waits until our placement has committed. A placement can therefore never land
 * under a term that another dispatcher has already replaced.
 *
 * Lock order: the lease row, then the job row; rescue takes a session row, then its claim rows,
 * then their task rows (the kernel's order).
 */
import { assert } from '../../core/assert.js';
import { backoffMs, type RetryPolicy } from '../../core/retry.js';
import type { DispatchStore, PlaceResult, RescueReport, TermRef } from '../dispatch-store.js';
import { jobById } from './jobs.js';
import { NOW, atMs, hostOf, jobColumns, ms, msInterval, toJob, type JobRow } from './rows.js';
import type { PgRunner } from './runner.js';

interface MutableReport extends RescueReport {
  sessions: number[];
  claimsReleased: number;
  jobsRequeued: number[];
  jobsFailed: number[];
}

/**
 * The live lease row for (name, holder, term), locked FOR SHARE, as CTE `l`; $1 name, $2 holder,
 * $3 term. Under READ COMMITTED a row locked after a wait is re-checked on its newest version,
 * so a term replaced meanwhile makes `l` empty. The lock is held to commit: the lease cannot be
 * taken over, renewed or resigned until the statement's writes are in. The statement's write
 * joins `l`, so `l` is read (and locked) before any job row is: lease, then job.
 */
const LIVE_TERM = `l AS (
  SELECT term FROM leases
  WHERE name = $1::text AND holder = $2::text AND term = $3::bigint
    AND expires_at > ${NOW}
  FOR SHARE
)`;

/**
 * queued → claimed on the host, assigned to its runner session, in one statement with its
 * 'job:placed' audit row. The job moves only while the term is live (`l`), its backoff has
 * passed and the host is enabled with a live runner session; a job that moved meanwhile is
 * re-checked on its newest version after the row-lock wait and matches nothing (claimed_at is
 * read in the SET list, so after that wait). Always one row: whether the term was live, and the
 * placed job (null columns when it did not move).
 */
const PLACE = `
WITH ${LIVE_TERM}, h AS (
  SELECT h.name, h.session_id FROM hosts h JOIN sessions s ON s.id = h.session_id
  WHERE h.name = $5::text AND h.enabled AND s.state = 'live'
), j AS (
  UPDATE jobs SET status = 'claimed', epoch = jobs.epoch + 1, attempt = jobs.attempt + 1,
    session_id = h.session_id, host = h.name, term = l.term, claimed_at = ${NOW},
    started_at = NULL, reason = NULL, agent_session_id = NULL, pid = NULL
  FROM l, h
  WHERE jobs.id = $4::bigint AND jobs.status = 'queued' AND jobs.run_after <= ${NOW}
  RETURNING ${jobColumns('jobs')}
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT claimed_at, 'job:placed', key, id, session_id, ${hostOf('j.session_id')}, epoch,
    jsonb_build_object('host', $5::text, 'term', $3::bigint, 'attempt', attempt)
  FROM j
)
SELECT EXISTS (SELECT 1 FROM l) AS live_term, j.*
FROM (SELECT 1) one LEFT JOIN j ON true`;

const termParams = (t: TermRef): unknown[] => [t.lease, t.holder, t.term];

export function postgresDispatch(run: PgRunner): DispatchStore['dispatch'] {
  return {
    queued: async (p) =>
      (
        await run.rows<JobRow>(
          `SELECT ${jobColumns('jobs')} FROM jobs
           WHERE status = 'queued' AND run_after <= ${NOW}
           ORDER BY priority, queued_at, id LIMIT $1::int`,
          [p.limit],
        )
      ).map(toJob),
    place: async (p): Promise<PlaceResult> => {
      const row = await run.one<Partial<JobRow> & { live_term: boolean }>(PLACE, [
        ...termParams(p.term),
        p.id,
        p.host,
      ]);
      assert(row !== undefined, 'place returns exactly one row');
      if (!row.live_term) return { ok: false, reason: 'fenced' };
      if (row.id === undefined || row.id === null) {
        return { ok: false, reason: 'lost', job: await jobById(run, p.id) };
      }
      return { ok: true, job: toJob(row as JobRow) };
    },
    markWaiting: async (p) => {
      const [r] = await run.rows<{ marked: number }>(
        `WITH ${LIVE_TERM}, j AS (
           UPDATE jobs SET reason = $5::text
           FROM l WHERE jobs.id = $4::bigint AND jobs.status = 'queued'
           RETURNING jobs.id
         )
         SELECT count(*) AS marked FROM j`,
        [...termParams(p.term), p.id, p.reason],
      );
      return r?.marked === 1;
    },
    assigned: async (session) =>
      (
        await run.rows<JobRow>(
          `SELECT ${jobColumns('jobs')} FROM jobs
           WHERE session_id = $1::bigint AND status = 'claimed' ORDER BY id`,
          [session],
        )
      ).map(toJob),
    attach: async (p) => {
      const row = await run.one<JobRow>(
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
        [p.id, p.session, p.epoch, p.agentSession, p.pid],
      );
      if (row === undefined) return { ok: false, reason: 'lost', job: await jobById(run, p.id) };
      return { ok: true, job: toJob(row) };
    },
    requeue: async (p) => {
      // A rare path (an agent crashed): read the job under (session, epoch), choose requeue or
      // fail and the backoff from what was read, then write guarded by the epoch and status read.
      const job = await run.one<JobRow>(
        `SELECT ${jobColumns('jobs')} FROM jobs
         WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint
           AND status IN ('claimed', 'running')`,
        [p.id, p.session, p.epoch],
      );
      const done = job === undefined ? null : await requeueOrFail(run, job, p.policy, p.reason);
      if (done === null) return { ok: false, reason: 'lost', job: await jobById(run, p.id) };
      return { ok: true, job: toJob(done.row) };
    },
  };
}

export function postgresRecovery(run: PgRunner): DispatchStore['recovery'] {
  return {
    rescueStale: async (p) => {
      const report: MutableReport = {
        sessions: [],
        claimsReleased: 0,
        jobsRequeued: [],
        jobsFailed: [],
      };
      const limit = p.limit ?? 100;
      const candidates = await run.rows<{ id: number; heartbeat_at: Date }>(
        `SELECT id, heartbeat_at FROM sessions
         WHERE state = 'live' AND heartbeat_at < ${NOW} - ${msInterval('$1')}
         ORDER BY id LIMIT $2::int`,
        [p.staleAfterMs, limit],
      );
      // One transaction per session, guarded by the heartbeat it observed; then one statement
      // per orphaned job, guarded by the epoch and status it observed. Counted once committed.
      for (const c of candidates) {
        const released = await rescueSession(run, c.id, ms(c.heartbeat_at));
        if (released === null) continue;
        report.sessions.push(c.id);
        report.claimsReleased += released;
      }
      for (const job of await orphanedJobs(run, limit)) {
        const done = await requeueOrFail(run, job, p.policy);
        if (done?.outcome === 'requeued') report.jobsRequeued.push(job.id);
        if (done?.outcome === 'failed') report.jobsFailed.push(job.id);
      }
      return report;
    },
  };
}

/**
 * Marks the session stale if it is still live with the heartbeat observed, then releases its
 * claims as `recovered`; the number released, or null when the session had moved on.
 *
 * Two statements in one transaction, as in sessions.end. The first locks the session row FOR
 * UPDATE, which conflicts with the FOR KEY SHARE a claim takes on its session (a plain UPDATE of
 * the state would not), so every claim that saw the session live has committed by then and every
 * later one waits and then reads it stale. The release needs the second statement's fresh
 * snapshot, which sees those claims; the first statement's snapshot predates the lock wait. Of
 * two sweeps racing, the second waits for the lock and then reads the session as stale.
 */
async function rescueSession(
  run: PgRunner,
  id: number,
  heartbeatMs: number,
): Promise<number | null> {
  return run.transaction(async (q) => {
    const [marked] = await q.rows<{ marked: number }>(
      `WITH l AS (
         SELECT id, state, heartbeat_at FROM sessions WHERE id = $1::bigint FOR UPDATE
       ), u AS (
         UPDATE sessions s SET state = 'stale', ended_at = ${NOW}
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
    const [released] = await q.rows<{ released: number }>(
      `WITH c AS (
         UPDATE claims SET released_at = s.ended_at, outcome = 'recovered'
         FROM sessions s
         WHERE s.id = $1::bigint AND claims.session_id = s.id AND claims.released_at IS NULL
         RETURNING claims.id, claims.task_id, claims.epoch, claims.released_at
       ), t AS (
         UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL
         FROM c WHERE tasks.id = c.task_id AND tasks.epoch = c.epoch
         RETURNING tasks.id
       ), a AS (
         INSERT INTO audit_events (at, type, task_key, session_id, host, epoch, detail)
         SELECT c.released_at, 'claim:released', k.key, $1::bigint, ${hostOf('$1::bigint')},
           c.epoch, '{"outcome":"recovered"}'::jsonb
         FROM c JOIN tasks k ON k.id = c.task_id
         ORDER BY c.id
       )
       SELECT count(*) AS released FROM c`,
      [id],
    );
    return released?.released ?? 0;
  });
}

/**
 * Active jobs whose runner or agent session is no longer live: stale, or ended without finishing
 * them. Read after this sweep's sessions committed, so it sees them.
 */
async function orphanedJobs(run: PgRunner, limit: number): Promise<JobRow[]> {
  return run.rows<JobRow>(
    `SELECT ${jobColumns('j')} FROM jobs j
     WHERE j.status IN ('claimed', 'running') AND (
       EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.session_id AND s.state <> 'live')
       OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.agent_session_id AND s.state <> 'live'))
     ORDER BY j.id LIMIT $1::int`,
    [limit],
  );
}

/**
 * Requeues the job with backoff, or fails it once its attempts ran out, with the audit row in
 * the same statement; the job as written, or null when it had moved. Guarded by the epoch,
 * status and runner session observed: a job that moved since (finished by its runner, or
 * rescued by another sweep) is re-checked on its newest version after the row-lock wait and
 * matches nothing. The backoff is core/retry.ts's, for the attempt observed.
 */
async function requeueOrFail(
  run: PgRunner,
  job: JobRow,
  policy: RetryPolicy,
  reason?: string,
): Promise<{ outcome: 'requeued' | 'failed'; row: JobRow } | null> {
  const why =
    reason ??
    `session ${job.session_id ?? '-'} (agent ${job.agent_session_id ?? '-'}) is no longer live`;
  // $1 id, $2 epoch, $3 status, $4 observed runner session, $5 why
  const guard = [job.id, job.epoch, job.status, job.session_id, why];
  const where = `id = $1::bigint AND epoch = $2::bigint AND status = $3::text
         AND session_id IS NOT DISTINCT FROM $4::bigint`;
  if (job.attempt < job.attempt_max) {
    const row = await run.one<JobRow>(
      `WITH j AS (
         UPDATE jobs SET status = 'queued', run_after = ${NOW} + ${msInterval('$6')},
           session_id = NULL, host = NULL, agent_session_id = NULL, pid = NULL,
           reason = 'requeued: ' || $5::text
         WHERE ${where}
         RETURNING ${jobColumns('jobs')}
       ), a AS (
         INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
         SELECT run_after - ${msInterval('$6')}, 'job:requeued', key, id, $4::bigint,
           ${hostOf('$4::bigint')}, epoch,
           jsonb_build_object('reason', $5::text, 'attempt', attempt)
         FROM j
       )
       SELECT * FROM j`,
      [...guard, backoffMs(policy, job.attempt)],
    );
    return row === undefined ? null : { outcome: 'requeued', row };
  }
  const row = await run.one<JobRow>(
    `WITH j AS (
       UPDATE jobs SET status = 'failed', finished_at = ${NOW},
         reason = 'attempts exhausted: ' || $5::text
       WHERE ${where}
       RETURNING ${jobColumns('jobs')}
     ), a AS (
       INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
       SELECT finished_at, 'job:finished', key, id, $4::bigint, ${hostOf('$4::bigint')}, epoch,
         jsonb_build_object('status', 'failed', 'reason', $5::text)
       FROM j
     )
     SELECT * FROM j`,
    guard,
  );
  return row === undefined ? null : { outcome: 'failed', row };
}
