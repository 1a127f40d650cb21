/**
 * The audit ledger: one append-only row per state change, written in the same transaction (in
 * practice the same statement) as the change, carrying the session, its host, the epoch or term
 * and the database time.
 */
import type { Instant } from './time.js';
import type { SessionId } from './session.js';
import type { TaskState } from './task.js';

export const AUDIT_TYPES = [
  'task:added',
  'session:started',
  'session:ended',
  'session:stale',
  'host:registered',
  'host:enabled',
  'host:disabled',
  'host:retired',
  'claim:granted',
  'claim:released',
  'claim:force_released',
  'job:enqueued',
  'job:claimed',
  'job:placed',
  'job:started',
  'job:spawned',
  'job:finished',
  'job:cancelled',
  'job:requeued',
  'job:skipped',
  'lease:acquired',
  'lease:resigned',
  'workspace:added',
  'agent:added',
  'project:added',
  'task:requirements-set',
  'lock:acquired',
  'lock:released',
  'effect:recorded',
  'job:stalled',
  'job:unstalled',
  'job:timed_out',
  'task:state',
  'task:gated',
  'task:approved',
  'task:depended',
  'task:undepended',
  'task:updated',
  'setting:set',
  'ledger:key-added',
  'ledger:key-retired',
  'ledger:pruned',
  'ledger:continued',
  'jobs:pruned',
  'token:created',
  'token:revoked',
  'auth:refused',
  'github:label-repaired',
  'github:recheck',
  'github:issue-closed',
  'github:text-changed',
] as const;
export type AuditType = (typeof AUDIT_TYPES)[number];

export interface AuditEntry {
  readonly id: number;
  readonly at: Instant;
  readonly type: AuditType;
  readonly key: string | null;
  readonly jobId: number | null;
  readonly session: SessionId | null;
  readonly host: string | null;
  /** The claim or job epoch, or the lease term, the change carried. */
  readonly epoch: number | null;
  readonly detail: Readonly<Record<string, unknown>>;
  /** The API token the row was written with (issue 17), or null when none was. */
  readonly token: string | null;
}

/** A task's move of state that a job's end made: open to done, or to in review. */
export interface TaskMove {
  readonly from: TaskState;
  readonly to: TaskState;
}

/**
 * The task move a `job:finished` row records: a job that ended done finishes its open task, and
 * its one row says so (detail `task`), with no `task:state` row beside it (decision 0023). Null
 * for any other row.
 */
export function finishedTaskMove(entry: Pick<AuditEntry, 'type' | 'detail'>): TaskMove | null {
  if (entry.type !== 'job:finished') return null;
  const task = entry.detail['task'];
  if (typeof task !== 'object' || task === null) return null;
  const { from, to } = task as Record<string, unknown>;
  return typeof from === 'string' && typeof to === 'string'
    ? { from: from as TaskState, to: to as TaskState }
    : null;
}
