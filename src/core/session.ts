/**
 * A session is one agent, human or daemon process taking part. Its heartbeat is the liveness
 * signal that recovery reads; an ended session keeps its row for the audit trail.
 */
import type { Instant } from './time.js';

export type SessionId = number;

export const SESSION_KINDS = ['agent', 'human', 'daemon'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

export const SESSION_STATES = ['live', 'ended', 'stale'] as const;
export type SessionState = (typeof SESSION_STATES)[number];

export interface Session {
  readonly id: SessionId;
  readonly kind: SessionKind;
  readonly host: string;
  readonly pid: number;
  readonly name: string | null;
  readonly startedAt: Instant;
  readonly heartbeatAt: Instant;
  /** Set when the session ended or was declared stale by recovery. */
  readonly endedAt: Instant | null;
  readonly state: SessionState;
}
