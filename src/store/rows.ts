/**
 * The rows both engines read, and the one mapping of each to the domain. The engines store the
 * same columns and differ only in how their driver returns three kinds of value: a time (a Date
 * from pg's timestamptz, integer milliseconds from SQLite), a boolean (true/false, or 0/1) and a
 * JSON value or list (parsed by pg from jsonb or text[], text from SQLite). A row type takes the
 * engine's Encoding, and each mapper takes the engine's RowDecoder: postgres/rows.ts and
 * sqlite/rows.ts name both once and bind the mappers to them.
 */
import type { AuditEntry, AuditType } from '../core/audit-event.js';
import type { Claim, ClaimOutcome } from '../core/claim.js';
import type { Job, JobState } from '../core/job.js';
import type { Lease } from '../core/lease.js';
import type { Session, SessionKind, SessionState } from '../core/session.js';
import type { Task, TaskGate, TaskState } from '../core/task.js';
import type { Instant } from '../core/time.js';
import type { WorkspaceLock } from '../core/workspace-lock.js';
import type { TaskStateFacts } from './task-refusal.js';

/** The types in which one engine's driver returns a time, a boolean and a JSON column. */
export interface Encoding {
  readonly time: unknown;
  readonly flag: unknown;
  readonly json: unknown;
}

/** How one engine turns those values into the domain's. */
export interface RowDecoder<E extends Encoding> {
  instant(value: E['time']): Instant;
  flag(value: E['flag']): boolean;
  json(value: E['json']): unknown;
}

export function instantOrNull<E extends Encoding>(
  decode: RowDecoder<E>,
  value: E['time'] | null,
): Instant | null {
  return value === null ? null : decode.instant(value);
}

export interface TaskRow<E extends Encoding> {
  id: number;
  key: string;
  title: string;
  priority: number;
  project: string | null;
  assignee: string | null;
  labels: E['json'];
  created_at: E['time'];
  epoch: number;
  holder_session_id: number | null;
  claimed_at: E['time'] | null;
  state: string;
  state_at: E['time'];
  state_by: string | null;
  state_reason: string | null;
  gate: string | null;
  review_required: E['flag'];
  body: string;
  url: string | null;
  feedback: string | null;
}

export function taskOf<E extends Encoding>(decode: RowDecoder<E>, r: TaskRow<E>): Task {
  return {
    key: r.key,
    title: r.title,
    body: r.body,
    url: r.url,
    priority: r.priority,
    project: r.project,
    assignee: r.assignee,
    labels: decode.json(r.labels) as string[],
    createdAt: decode.instant(r.created_at),
    epoch: r.epoch,
    holder:
      r.holder_session_id === null
        ? null
        : { session: r.holder_session_id, since: instantOrNull(decode, r.claimed_at) ?? 0 },
    state: r.state as TaskState,
    stateAt: decode.instant(r.state_at),
    stateBy: r.state_by,
    stateReason: r.state_reason,
    gate: r.gate as TaskGate | null,
    reviewRequired: decode.flag(r.review_required),
    feedback: r.feedback,
  };
}

export type TaskStateColumns<E extends Encoding> = Pick<
  TaskRow<E>,
  'key' | 'state' | 'state_at' | 'state_by' | 'state_reason'
>;

/** A task's state facts from a task row (or the columns of one), for taskStateRefusal. */
export function stateFactsOf<E extends Encoding>(
  decode: RowDecoder<E>,
  r: TaskStateColumns<E>,
): TaskStateFacts {
  return {
    key: r.key,
    state: r.state as TaskState,
    stateAt: decode.instant(r.state_at),
    stateBy: r.state_by,
    stateReason: r.state_reason,
  };
}

export interface SessionRow<E extends Encoding> {
  id: number;
  kind: string;
  host: string;
  pid: number;
  name: string | null;
  started_at: E['time'];
  heartbeat_at: E['time'];
  ended_at: E['time'] | null;
  state: string;
  ttl_ms: number | null;
}

export function sessionOf<E extends Encoding>(decode: RowDecoder<E>, r: SessionRow<E>): Session {
  return {
    id: r.id,
    kind: r.kind as SessionKind,
    host: r.host,
    pid: r.pid,
    name: r.name,
    startedAt: decode.instant(r.started_at),
    heartbeatAt: decode.instant(r.heartbeat_at),
    endedAt: instantOrNull(decode, r.ended_at),
    state: r.state as SessionState,
    ttlMs: r.ttl_ms,
  };
}

export interface ClaimRow<E extends Encoding> {
  key: string;
  session_id: number;
  epoch: number;
  claimed_at: E['time'];
  heartbeat_at: E['time'];
  released_at: E['time'] | null;
  outcome: string | null;
}

export function claimOf<E extends Encoding>(decode: RowDecoder<E>, r: ClaimRow<E>): Claim {
  return {
    key: r.key,
    session: r.session_id,
    epoch: r.epoch,
    claimedAt: decode.instant(r.claimed_at),
    heartbeatAt: decode.instant(r.heartbeat_at),
    releasedAt: instantOrNull(decode, r.released_at),
    outcome: r.outcome as ClaimOutcome | null,
  };
}

export interface JobRow<E extends Encoding> {
  id: number;
  task_id: number;
  key: string;
  status: string;
  priority: number;
  queued_at: E['time'];
  ram_mb: number | null;
  command: string | null;
  attempt: number;
  attempt_max: number;
  epoch: number;
  session_id: number | null;
  host: string | null;
  claimed_at: E['time'] | null;
  started_at: E['time'] | null;
  finished_at: E['time'] | null;
  exit_code: number | null;
  reason: string | null;
  run_after: E['time'];
  term: number | null;
  agent_session_id: number | null;
  pid: number | null;
  output_tail: string | null;
}

export function jobOf<E extends Encoding>(decode: RowDecoder<E>, r: JobRow<E>): Job {
  return {
    id: r.id,
    key: r.key,
    status: r.status as JobState,
    priority: r.priority,
    queuedAt: decode.instant(r.queued_at),
    ramMb: r.ram_mb,
    command: r.command,
    attempt: r.attempt,
    attemptMax: r.attempt_max,
    epoch: r.epoch,
    session: r.session_id,
    host: r.host,
    claimedAt: instantOrNull(decode, r.claimed_at),
    startedAt: instantOrNull(decode, r.started_at),
    finishedAt: instantOrNull(decode, r.finished_at),
    exitCode: r.exit_code,
    reason: r.reason,
    runAfter: decode.instant(r.run_after),
    term: r.term,
    agentSession: r.agent_session_id,
    pid: r.pid,
    outputTail: r.output_tail,
  };
}

export interface LeaseRow<E extends Encoding> {
  name: string;
  holder: string | null;
  term: number;
  acquired_at: E['time'];
  expires_at: E['time'];
}

export function leaseOf<E extends Encoding>(decode: RowDecoder<E>, r: LeaseRow<E>): Lease {
  return {
    name: r.name,
    holder: r.holder,
    term: r.term,
    acquiredAt: decode.instant(r.acquired_at),
    expiresAt: decode.instant(r.expires_at),
  };
}

export interface AuditRow<E extends Encoding> {
  id: number;
  at: E['time'];
  type: string;
  task_key: string | null;
  job_id: number | null;
  session_id: number | null;
  host: string | null;
  epoch: number | null;
  token_id?: string | null;
  detail: E['json'];
}

export function auditOf<E extends Encoding>(decode: RowDecoder<E>, r: AuditRow<E>): AuditEntry {
  return {
    id: r.id,
    at: decode.instant(r.at),
    type: r.type as AuditType,
    key: r.task_key,
    jobId: r.job_id,
    session: r.session_id,
    host: r.host,
    epoch: r.epoch,
    detail: decode.json(r.detail) as Record<string, unknown>,
    token: r.token_id ?? null,
  };
}

export interface LockRow<E extends Encoding> {
  workspace: string;
  job_id: number | null;
  session_id: number;
  epoch: number;
  acquired_at: E['time'];
}

export function lockOf<E extends Encoding>(decode: RowDecoder<E>, r: LockRow<E>): WorkspaceLock {
  return {
    workspace: r.workspace,
    session: r.session_id,
    jobId: r.job_id,
    epoch: r.epoch,
    acquiredAt: decode.instant(r.acquired_at),
  };
}
