/**
 * The session report (docs/architecture.md#session-report): who worked, on which host, on what, and
 * how it ended, one row per session. For Art. 13 transparency: "which physical host ran what".
 */
import type { SessionId, SessionKind } from './session.js';
import type { Instant } from './time.js';

/**
 * How a session ended: still `live`; `ended` by itself or its runner; `rescued` after its
 * heartbeats stopped and its process never came back; `fenced` when declared stale while its
 * process was still alive (it rejoined under a new session with the same host and pid).
 */
export type SessionEnd = 'live' | 'ended' | 'rescued' | 'fenced';

export interface IssueWorked {
  readonly key: string;
  readonly epoch: number;
  /** The claim's outcome (done, failed, released, abandoned, recovered), or null while held. */
  readonly outcome: string | null;
  readonly claimedAt: Instant;
  readonly releasedAt: Instant | null;
}

export interface SessionReport {
  readonly session: SessionId;
  readonly kind: SessionKind;
  /** The seed's server_node. */
  readonly host: string;
  readonly pid: number;
  readonly name: string | null;
  readonly startedAt: Instant;
  readonly endedAt: Instant | null;
  readonly end: SessionEnd;
  readonly issuesWorked: readonly IssueWorked[];
  /** Jobs this session took or was placed, and how many times (attempts). */
  readonly jobs: number;
  readonly attempts: number;
  /** Time its claims were held, summed (a live claim counts up to now). */
  readonly heldMs: number;
  /** Ledger rows of an escalation kind written by this session. */
  readonly escalations: number;
}

export interface SessionReportParams {
  /** Sessions live at some point in [since, until). */
  readonly since?: Instant | undefined;
  readonly until?: Instant | undefined;
  readonly host?: string | undefined;
  readonly limit?: number | undefined;
}
