/** Term-fenced placement, the runner's assignments, and rescue of stale sessions, on SQLite. */
import type { Job, JobTransitionResult } from '../../core/job.js';
import type { TaskGate } from '../../core/task.js';
import type {
  DispatchStore,
  JobAttachParams,
  JobRequeueParams,
  JobSkipParams,
  PlaceParams,
  PlaceResult,
  QueuedJob,
  TermRef,
} from '../dispatch-store.js';
import { emptyReport, LEASE_EXPIRED, orphanReason, type MutableReport, type OrphanFacts } from '../rescue.js';
import { blockerOf, claimSet, OPEN, taskOpen } from './claim-set.js';
import { jobById } from './jobs.js';
import { grantLock, liveLock, releaseSessionLocks, toHolder } from './locks.js';
import { appendAudit, toJob, type JobRow } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { requeueOrFail } from './requeue.js';
import { releaseAllClaims } from './tasks-claims.js';
import { existingWorkspace } from './workspaces.js';

/** A placement's claim: for the host's runner session, under the term, never started. */
const PLACEMENT_SET = claimSet({
  status: "'claimed'",
  session: '(SELECT session_id FROM hosts WHERE name = @host)',
  host: '@host',
  now: '@now',
  startedAt: 'NULL',
  term: '@term',
});

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';
const RETURNING = 'RETURNING *, (SELECT key FROM tasks WHERE id = jobs.task_id) AS key';

/** True while `term` is the live term of its lease, on the database clock. */
export function termIsCurrent(exec: SqliteExecutor, term: TermRef, now: number): boolean {
  return (
    exec
      .prepare('SELECT 1 FROM leases WHERE name = ? AND holder = ? AND term = ? AND expires_at > ?')
      .get(term.lease, term.holder, term.term, now) !== undefined
  );
}

/**
 * A queued job without a command bound for a host whose runner said it has no agent command
 * (docs/decisions/0047); read in the placement's write transaction, so it holds for the UPDATE.
 */
function lacksAgentCommand(exec: SqliteExecutor, params: PlaceParams): boolean {
  const row = exec
    .prepare(
      `SELECT 1 AS lacks FROM jobs j JOIN hosts h ON h.name = ?
       WHERE j.id = ? AND j.status = 'queued' AND j.command IS NULL AND h.agent_command = 0`,
    )
    .get(params.host, params.id);
  return row !== undefined;
}

/**
 * One placement inside the caller's write transaction, the term already checked at `now`:
 * gated or blocked, an unknown workspace (thrown), no_agent_command, workspace_held, lost, else
 * the job claimed on the host for its runner session with its ledger row, and the workspace's
 * lock with the placement.
 */
export function placeOne(exec: SqliteExecutor, now: number, params: PlaceParams): PlaceResult {
  const task = exec
    .prepare(
      `SELECT ${taskOpen('t')} AS open, t.gate, ${blockerOf('t')} AS blocker
       FROM jobs j JOIN tasks t ON t.id = j.task_id WHERE j.id = ?`,
    )
    .get(params.id) as { open: 0 | 1; gate: TaskGate | null; blocker: string | null } | undefined;
  if (task !== undefined && task.open === 0) {
    if (task.gate === null && task.blocker !== null)
      return { ok: false, reason: 'blocked', blocker: task.blocker };
    return { ok: false, reason: 'gated', gate: task.gate };
  }
  if (lacksAgentCommand(exec, params)) return { ok: false, reason: 'no_agent_command' };
  // An exclusive plan: the workspace must be free, and the lock is granted below with the
  // placement, in this transaction, so neither happens without the other.
  const ws = params.workspace === undefined ? null : existingWorkspace(exec, params.workspace);
  const held = ws === null ? undefined : liveLock(exec, ws.name);
  if (held !== undefined) return { ok: false, reason: 'workspace_held', holder: toHolder(held) };
  const row = exec
    .prepare(
      `UPDATE jobs SET ${PLACEMENT_SET}
       WHERE id = @id AND status = 'queued' AND run_after <= @now
         AND EXISTS (SELECT 1 FROM hosts h JOIN sessions s ON s.id = h.session_id
                     WHERE h.name = @host AND h.enabled = 1 AND s.state = 'live')
       ${RETURNING}`,
    )
    .get({ host: params.host, term: params.term.term, now, id: params.id }) as JobRow | undefined;
  if (row === undefined) return { ok: false, reason: 'lost', job: jobById(exec, params.id) };
  appendAudit(exec, {
    at: now,
    type: 'job:placed',
    key: row.key,
    jobId: row.id,
    session: row.session_id,
    epoch: row.epoch,
    detail: { host: params.host, term: params.term.term, attempt: row.attempt },
  });
  if (ws !== null && row.session_id !== null) {
    grantLock(exec, now, {
      workspace: ws.name,
      lockEpoch: ws.lock_epoch,
      session: row.session_id,
      jobId: row.id,
      key: row.key,
    });
  }
  return { ok: true, job: toJob(row) };
}

/** The dispatch group but for the pass's own steps (dispatch-pass.ts). */
export type SyncDispatch = Omit<DispatchStore['dispatch'], 'candidates' | 'placeMany' | 'setAside'>;

export function sqliteDispatch(exec: SqliteExecutor): Sync<SyncDispatch> {
  return {
    queued: (params) => exec.read(() => queuedIn(exec, params)),
    place: (params) =>
      exec.write((): PlaceResult => {
        const now = exec.now();
        if (!termIsCurrent(exec, params.term, now)) return { ok: false, reason: 'fenced' };
        return placeOne(exec, now, params);
      }),
    markWaiting: (params) =>
      exec.write(() => {
        const now = exec.now();
        if (!termIsCurrent(exec, params.term, now)) return false;
        return (
          exec
            .prepare(`UPDATE jobs SET reason = ? WHERE id = ? AND status = 'queued'`)
            .run(params.reason, params.id).changes === 1
        );
      }),
    skip: (params) => exec.write(() => skipIn(exec, params)),
    assigned: (session) =>
      exec.read(() =>
        (
          exec
            .prepare(`${JOB_SELECT} WHERE j.session_id = ? AND j.status = 'claimed' ORDER BY j.id`)
            .all(session) as JobRow[]
        ).map(toJob),
      ),
    attach: (params) => exec.write(() => attachIn(exec, params)),
    requeue: (params) => exec.write(() => requeueIn(exec, params)),
  };
}

/** dispatch.queued, inside the caller's read transaction: due jobs of open tasks, in dispatch order. */
function queuedIn(exec: SqliteExecutor, params: { readonly limit: number }): QueuedJob[] {
  const now = exec.now();
  return (
    exec
      .prepare(
        `SELECT j.*, t.key, t.gate FROM jobs j JOIN tasks t ON t.id = j.task_id
               WHERE j.status = 'queued' AND j.run_after <= ? AND ${OPEN('t')}
               ORDER BY j.priority, j.queued_at, j.id LIMIT ?`,
      )
      .all(now, params.limit) as (JobRow & { gate: TaskGate | null })[]
  ).map((row) => ({ ...toJob(row), gate: row.gate }));
}

/** dispatch.skip, inside the caller's write transaction; audited only when the reason changes. */
function skipIn(exec: SqliteExecutor, params: JobSkipParams): boolean {
  const now = exec.now();
  if (!termIsCurrent(exec, params.term, now)) return false;
  const job = exec.prepare(`${JOB_SELECT} WHERE j.id = ? AND j.status = 'queued'`).get(params.id) as
    JobRow | undefined;
  if (job === undefined) return false;
  exec
    .prepare(`UPDATE jobs SET reason = ?, run_after = ? WHERE id = ? AND status = 'queued'`)
    .run(params.reason, now + params.backoffMs, params.id);
  if (job.reason !== params.reason) {
    appendAudit(exec, { at: now, type: 'job:skipped', key: job.key, jobId: job.id, detail: params.detail });
  }
  return true;
}

/** dispatch.attach, inside the caller's write transaction, with its `job:spawned` row. */
function attachIn(exec: SqliteExecutor, params: JobAttachParams): JobTransitionResult {
  const now = exec.now();
  const row = exec
    .prepare(
      `UPDATE jobs SET agent_session_id = ?, pid = ?
             WHERE id = ? AND session_id = ? AND epoch = ? AND status = 'running' ${RETURNING}`,
    )
    .get(params.agentSession, params.pid, params.id, params.session, params.epoch) as JobRow | undefined;
  if (row === undefined) return { ok: false, reason: 'lost', job: jobById(exec, params.id) } as const;
  appendAudit(exec, {
    at: now,
    type: 'job:spawned',
    key: row.key,
    jobId: row.id,
    session: params.agentSession,
    epoch: params.epoch,
    detail: { pid: params.pid, runner: params.session },
  });
  return { ok: true, job: toJob(row) } as const;
}

/** dispatch.requeue, inside the caller's write transaction. */
function requeueIn(exec: SqliteExecutor, params: JobRequeueParams): JobTransitionResult {
  const row = exec
    .prepare(
      `${JOB_SELECT} WHERE j.id = ? AND j.session_id = ? AND j.epoch = ? AND j.status IN ('claimed', 'running')`,
    )
    .get(params.id, params.session, params.epoch) as JobRow | undefined;
  if (
    row === undefined ||
    !requeueOrFail(exec, row, params.policy, emptyReport(), 'released', params.reason, params.attemptCounts)
  ) {
    return { ok: false, reason: 'lost', job: jobById(exec, params.id) } as const;
  }
  return { ok: true, job: jobById(exec, params.id) as Job } as const;
}

export function sqliteRecovery(exec: SqliteExecutor): Sync<DispatchStore['recovery']> {
  return {
    rescueStale: (params) => {
      const report = emptyReport();
      const candidates = exec.read(() => {
        const now = exec.now();
        return exec
          .prepare(
            `SELECT id, heartbeat_at FROM sessions
             WHERE state = 'live' AND heartbeat_at < ? - coalesce(ttl_ms, ?)
             ORDER BY id LIMIT ?`,
          )
          .all(now, params.staleAfterMs, params.limit ?? 100) as { id: number; heartbeat_at: number }[];
      });
      // One transaction per session, each guarded by the heartbeat it observed; then one per
      // orphaned job, guarded by the epoch and status it observed.
      for (const candidate of candidates) exec.write(() => rescueOne(exec, candidate, report));
      for (const job of exec.read(() => orphanedJobs(exec, params.limit ?? 100))) {
        const reason = job.lease_passed === 1 ? LEASE_EXPIRED : orphanReason(job);
        exec.write(() => requeueOrFail(exec, job, params.policy, report, 'recovered', reason));
      }
      return report;
    },
  };
}

function rescueOne(
  exec: SqliteExecutor,
  candidate: { id: number; heartbeat_at: number },
  report: MutableReport,
): void {
  const now = exec.now();
  const marked = exec
    .prepare(
      `UPDATE sessions SET state = 'stale', ended_at = ?, end_reason = 'rescued'
       WHERE id = ? AND state = 'live' AND heartbeat_at = ?`,
    )
    .run(now, candidate.id, candidate.heartbeat_at).changes;
  if (marked === 0) return;
  report.sessions.push(candidate.id);
  appendAudit(exec, {
    at: now,
    type: 'session:stale',
    session: candidate.id,
    detail: { heartbeatAt: candidate.heartbeat_at },
  });
  report.claimsReleased += releaseAllClaims(exec, now, candidate.id, 'recovered');
  report.locksReleased += releaseSessionLocks(exec, now, candidate.id, 'recovered').length;
}

/**
 * Active jobs whose runner or agent session is no longer live (stale, or ended without finishing
 * them), or whose lease has passed while their session lives on: `lease_passed` says which.
 * Through the active jobs' partial index: left to itself, SQLite walked the whole table in id
 * order for the LIMIT, finished history included, on every sweep. @now is the database's clock.
 * With what the reason tells (rescue.ts orphanReason): whether the runner's session is live, and
 * the agent session's last claim of the task (by task, then session: a claim's epoch is the
 * task's, not the job's).
 */
export const ORPHANED_JOBS = `
  SELECT j.*, t.key, coalesce(j.lease_until <= @now, 0) AS lease_passed,
    (SELECT r.state = 'live' FROM sessions r WHERE r.id = j.session_id) AS runner_live,
    c.epoch AS claim_epoch, c.outcome AS claim_outcome
  FROM jobs j INDEXED BY jobs_active JOIN tasks t ON t.id = j.task_id
  LEFT JOIN claims c ON c.id = (
    SELECT l.id FROM claims l WHERE l.task_id = j.task_id AND l.session_id = j.agent_session_id
    ORDER BY l.epoch DESC LIMIT 1)
  WHERE j.status IN ('claimed', 'running') AND (
    EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.session_id AND s.state <> 'live')
    OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.agent_session_id AND s.state <> 'live')
    OR j.lease_until <= @now)
  ORDER BY j.id LIMIT @limit`;

type OrphanRow = JobRow & OrphanFacts & { lease_passed: number };

function orphanedJobs(exec: SqliteExecutor, limit: number): OrphanRow[] {
  return exec.prepare(ORPHANED_JOBS).all({ now: exec.now(), limit }) as OrphanRow[];
}
