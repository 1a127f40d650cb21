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
import type { FeedbackFrom, Task, TaskGate, TaskState } from '../core/task.js';
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
  feedback_from: string;
}

export function taskOf<E extends Encoding>(decode: RowDecoder<E>, row: TaskRow<E>): Task {
  return {
    key: row.key,
    title: row.title,
    body: row.body,
    url: row.url,
    priority: row.priority,
    project: row.project,
    assignee: row.assignee,
    labels: decode.json(row.labels) as string[],
    createdAt: decode.instant(row.created_at),
    epoch: row.epoch,
    holder:
      row.holder_session_id === null
        ? null
        : { session: row.holder_session_id, since: instantOrNull(decode, row.claimed_at) ?? 0 },
    state: row.state as TaskState,
    stateAt: decode.instant(row.state_at),
    stateBy: row.state_by,
    stateReason: row.state_reason,
    gate: row.gate as TaskGate | null,
    reviewRequired: decode.flag(row.review_required),
    feedback: row.feedback,
    feedbackFrom: row.feedback === null ? null : (row.feedback_from as FeedbackFrom),
  };
}

export type TaskStateColumns<E extends Encoding> = Pick<
  TaskRow<E>,
  'key' | 'state' | 'state_at' | 'state_by' | 'state_reason'
>;

/** A task's state facts from a task row (or the columns of one), for taskStateRefusal. */
export function stateFactsOf<E extends Encoding>(
  decode: RowDecoder<E>,
  row: TaskStateColumns<E>,
): TaskStateFacts {
  return {
    key: row.key,
    state: row.state as TaskState,
    stateAt: decode.instant(row.state_at),
    stateBy: row.state_by,
    stateReason: row.state_reason,
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
  end_reason: string | null;
  ended_by: string | null;
}

export function sessionOf<E extends Encoding>(decode: RowDecoder<E>, row: SessionRow<E>): Session {
  return {
    id: row.id,
    kind: row.kind as SessionKind,
    host: row.host,
    pid: row.pid,
    name: row.name,
    startedAt: decode.instant(row.started_at),
    heartbeatAt: decode.instant(row.heartbeat_at),
    endedAt: instantOrNull(decode, row.ended_at),
    state: row.state as SessionState,
    ttlMs: row.ttl_ms,
    endReason: row.end_reason as Session['endReason'],
    endedBy: row.ended_by,
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

export function claimOf<E extends Encoding>(decode: RowDecoder<E>, row: ClaimRow<E>): Claim {
  return {
    key: row.key,
    session: row.session_id,
    epoch: row.epoch,
    claimedAt: decode.instant(row.claimed_at),
    heartbeatAt: decode.instant(row.heartbeat_at),
    releasedAt: instantOrNull(decode, row.released_at),
    outcome: row.outcome as ClaimOutcome | null,
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
  time_limit_ms: number | null;
}

export function jobOf<E extends Encoding>(decode: RowDecoder<E>, row: JobRow<E>): Job {
  return {
    id: row.id,
    key: row.key,
    status: row.status as JobState,
    priority: row.priority,
    queuedAt: decode.instant(row.queued_at),
    ramMb: row.ram_mb,
    command: row.command,
    attempt: row.attempt,
    attemptMax: row.attempt_max,
    epoch: row.epoch,
    session: row.session_id,
    host: row.host,
    claimedAt: instantOrNull(decode, row.claimed_at),
    startedAt: instantOrNull(decode, row.started_at),
    finishedAt: instantOrNull(decode, row.finished_at),
    exitCode: row.exit_code,
    reason: row.reason,
    runAfter: decode.instant(row.run_after),
    term: row.term,
    agentSession: row.agent_session_id,
    pid: row.pid,
    outputTail: row.output_tail,
    timeLimitMs: row.time_limit_ms,
  };
}

export interface LeaseRow<E extends Encoding> {
  name: string;
  holder: string | null;
  term: number;
  acquired_at: E['time'];
  expires_at: E['time'];
}

export function leaseOf<E extends Encoding>(decode: RowDecoder<E>, row: LeaseRow<E>): Lease {
  return {
    name: row.name,
    holder: row.holder,
    term: row.term,
    acquiredAt: decode.instant(row.acquired_at),
    expiresAt: decode.instant(row.expires_at),
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

export function auditOf<E extends Encoding>(decode: RowDecoder<E>, row: AuditRow<E>): AuditEntry {
  return {
    id: row.id,
    at: decode.instant(row.at),
    type: row.type as AuditType,
    key: row.task_key,
    jobId: row.job_id,
    session: row.session_id,
    host: row.host,
    epoch: row.epoch,
    detail: decode.json(row.detail) as Record<string, unknown>,
    token: row.token_id ?? null,
  };
}

export interface LockRow<E extends Encoding> {
  workspace: string;
  job_id: number | null;
  session_id: number;
  epoch: number;
  acquired_at: E['time'];
}

export function lockOf<E extends Encoding>(decode: RowDecoder<E>, row: LockRow<E>): WorkspaceLock {
  return {
    workspace: row.workspace,
    session: row.session_id,
    jobId: row.job_id,
    epoch: row.epoch,
    acquiredAt: decode.instant(row.acquired_at),
  };
}
