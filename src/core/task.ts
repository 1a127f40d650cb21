/**
 * A task is a unit of work with a stable external key (an issue, a ticket, any string up to
 * KEY_LENGTH_MAX). It is the thing a claim protects: at most one session holds a task at a time.
 */
import type { Instant } from './time.js';
import type { SessionId } from './session.js';

export interface Task {
  readonly key: string;
  readonly title: string;
  /** Lower runs first; ties break on queued_at, then id. */
  readonly priority: number;
  readonly project: string | null;
  readonly assignee: string | null;
  readonly labels: readonly string[];
  readonly createdAt: Instant;
  /** The epoch of the newest claim ever granted on this task; 0 when never claimed. */
  readonly epoch: number;
  /** The live claim, if any. */
  readonly holder: { readonly session: SessionId; readonly since: Instant } | null;
}
