/** Maps SQLite rows (times as integer milliseconds) to domain values. */
import type { AuditEntry, AuditType } from '../../core/audit-event.js';
import type { Claim, ClaimOutcome, Holder } from '../../core/claim.js';
import type { Job, JobState } from '../../core/job.js';
import type { Lease } from '../../core/lease.js';
import type { Session, SessionKind, SessionState } from '../../core/session.js';
import type { Task, TaskGate, TaskState } from '../../core/task.js';
import type { SqliteExecutor } from './executor.js';
import { actingToken } from '../actor.js';

export interface TaskRow {
  id: number;
  key: string;
  title: string;
  priority: number;
  project: string | null;
  assignee: string | null;
  labels: string;
  created_at: number;
  epoch: number;
  holder_session_id: number | null;
  claimed_at: number | null;
  state: string;
  state_at: number;
  state_by: string | null;
  state_reason: string | null;
  gate: string | null;
  review_required: number;
  body: string;
  url: string | null;
  feedback: string | null;
}

export function toTask(r: TaskRow): Task {
  return {
    key: r.key,
    title: r.title,
    body: r.body,
    url: r.url,
    priority: r.priority,
    project: r.project,
    assignee: r.assignee,
    labels: JSON.parse(r.labels) as string[],
    createdAt: r.created_at,
    epoch: r.epoch,
    holder: r.holder_session_id === null ? null : { session: r.holder_session_id, since: r.claimed_at ?? 0 },
    state: r.state as TaskState,
    stateAt: r.state_at,
    stateBy: r.state_by,
    stateReason: r.state_reason,
    gate: r.gate as TaskGate | null,
    reviewRequired: r.review_required === 1,
    feedback: r.feedback,
  };
}

export interface SessionRow {
  id: number;
  kind: string;
  host: string;
  pid: number;
  name: string | null;
  started_at: number;
  heartbeat_at: number;
  ended_at: number | null;
  state: string;
  ttl_ms: number | null;
}

export function toSession(r: SessionRow): Session {
  return {
    id: r.id,
    kind: r.kind as SessionKind,
    host: r.host,
    pid: r.pid,
    name: r.name,
    startedAt: r.started_at,
    heartbeatAt: r.heartbeat_at,
    endedAt: r.ended_at,
    state: r.state as SessionState,
    ttlMs: r.ttl_ms,
  };
}

export interface ClaimRow {
  key: string;
  session_id: number;
  epoch: number;
  claimed_at: number;
  heartbeat_at: number;
  released_at: number | null;
  outcome: string | null;
}

export function toClaim(r: ClaimRow): Claim {
  return {
    key: r.key,
    session: r.session_id,
    epoch: r.epoch,
    claimedAt: r.claimed_at,
    heartbeatAt: r.heartbeat_at,
    releasedAt: r.released_at,
    outcome: r.outcome as ClaimOutcome | null,
  };
}

export interface JobRow {
  id: number;
  task_id: number;
  key: string;
  status: string;
  priority: number;
  queued_at: number;
  ram_mb: number | null;
  command: string | null;
  attempt: number;
  attempt_max: number;
  epoch: number;
  session_id: number | null;
  host: string | null;
  claimed_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  exit_code: number | null;
  reason: string | null;
  run_after: number;
  term: number | null;
  agent_session_id: number | null;
  pid: number | null;
  output_tail: string | null;
}

export function toJob(r: JobRow): Job {
  return {
    id: r.id,
    key: r.key,
    status: r.status as JobState,
    priority: r.priority,
    queuedAt: r.queued_at,
    ramMb: r.ram_mb,
    command: r.command,
    attempt: r.attempt,
    attemptMax: r.attempt_max,
    epoch: r.epoch,
    session: r.session_id,
    host: r.host,
    claimedAt: r.claimed_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    exitCode: r.exit_code,
    reason: r.reason,
    runAfter: r.run_after,
    term: r.term,
    agentSession: r.agent_session_id,
    pid: r.pid,
    outputTail: r.output_tail,
  };
}

export interface LeaseRow {
  name: string;
  holder: string | null;
  term: number;
  acquired_at: number;
  expires_at: number;
}

export function toLease(r: LeaseRow): Lease {
  return {
    name: r.name,
    holder: r.holder,
    term: r.term,
    acquiredAt: r.acquired_at,
    expiresAt: r.expires_at,
  };
}

export interface AuditRow {
  id: number;
  at: number;
  type: string;
  task_key: string | null;
  job_id: number | null;
  session_id: number | null;
  host: string | null;
  epoch: number | null;
  token_id?: string | null;
  detail: string;
}

export function toAudit(r: AuditRow): AuditEntry {
  return {
    id: r.id,
    at: r.at,
    type: r.type as AuditType,
    key: r.task_key,
    jobId: r.job_id,
    session: r.session_id,
    host: r.host,
    epoch: r.epoch,
    detail: JSON.parse(r.detail) as Record<string, unknown>,
    token: r.token_id ?? null,
  };
}

/** The holder of a task's live claim, as told to a loser. */
export function holderOf(exec: SqliteExecutor, taskId: number): Holder | null {
  const row = exec
    .prepare(
      `SELECT c.session_id, s.host, c.claimed_at, c.epoch FROM claims c
       JOIN sessions s ON s.id = c.session_id
       WHERE c.task_id = ? AND c.released_at IS NULL`,
    )
    .get(taskId) as { session_id: number; host: string; claimed_at: number; epoch: number } | undefined;
  return row === undefined
    ? null
    : { session: row.session_id, host: row.host, since: row.claimed_at, epoch: row.epoch };
}

export interface AuditInsert {
  readonly at: number;
  readonly type: AuditType;
  readonly key?: string | null;
  readonly jobId?: number | null;
  readonly session?: number | null;
  readonly epoch?: number | null;
  readonly detail?: Record<string, unknown>;
}

/**
 * Appends a ledger row inside the caller's transaction; the host is the session's, the token the
 * one the caller acts with (actor.ts).
 */
export function appendAudit(exec: SqliteExecutor, e: AuditInsert): void {
  exec
    .prepare(
      `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail, token_id)
       VALUES (?, ?, ?, ?, ?, (SELECT host FROM sessions WHERE id = ?), ?, ?, ?)`,
    )
    .run(
      e.at,
      e.type,
      e.key ?? null,
      e.jobId ?? null,
      e.session ?? null,
      e.session ?? null,
      e.epoch ?? null,
      JSON.stringify(e.detail ?? {}),
      actingToken(),
    );
}
