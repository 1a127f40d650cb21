/**
 * The session report (docs/architecture.md#session-report): who worked, on which host, on what, and
 * how it ended, one row per session. For Art. 13 transparency: "which physical host ran what".
 */
import type { SessionEndReason, SessionId, SessionKind } from './session.js';
import type { Instant } from './time.js';

/**
 * How a session ended: still `live`; `ended` by itself or its runner; `rescued` after its
 * heartbeats stopped and its process never came back; `fenced` when declared stale while its
 * process was still alive (it rejoined under a new session with the same host and pid).
 */
export type SessionEnd = 'live' | 'ended' | 'rescued' | 'fenced';

/** How the job run under a claim ended, from its ledger rows, as `baton job show` tells it. */
export interface IssueRun {
  readonly job: number;
  /** requeued, done, failed, oom_killed, cancelled, escalated. */
  readonly outcome: string;
  readonly reason: string | null;
}

export interface IssueWorked {
  readonly key: string;
  readonly epoch: number;
  /**
   * The claim's outcome (done, failed, released, abandoned, recovered, escalated, expired), or null
   * while held; `force_released` when an operator ended it (`baton force-release`), not its holder.
   */
  readonly outcome: string | null;
  readonly claimedAt: Instant;
  readonly releasedAt: Instant | null;
  /** The job run this claim was taken for (an agent session's), once it ended; else null. */
  readonly run: IssueRun | null;
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
  /** Why it ended; null while live, or not recorded (ended before 0027, rescued before 0028). */
  readonly endReason: SessionEndReason | null;
  /** Who ended it, in words, when an operator did (`endReason` `operator`); else null. */
  readonly endedBy: string | null;
  /** An agent session's own process (`pid` is the `baton up` that ran it); null if none spawned. */
  readonly agentPid: number | null;
  readonly issuesWorked: readonly IssueWorked[];
  /** Jobs this session took or was placed, and how many times (attempts). */
  readonly jobs: number;
  readonly attempts: number;
  /** Time its claims were held, summed (a live claim counts up to now). */
  readonly heldMs: number;
  /** Its claims that ended `escalated`: tasks handed to a human while this session held them. */
  readonly escalations: number;
}

export interface SessionReportParams {
  /** Sessions live at some point in [since, until). */
  readonly since?: Instant | undefined;
  readonly until?: Instant | undefined;
  readonly host?: string | undefined;
  readonly limit?: number | undefined;
}

/** How a session ended, in words: `baton report sessions` and the dashboard's Sessions view. */
export function describeEnd(
  report: Pick<SessionReport, 'end' | 'endReason'> & { readonly endedBy?: string | null },
): string {
  switch (report.end) {
    case 'live':
      return 'live';
    case 'ended':
      if (report.endReason === 'stopped') return 'stopped';
      if (report.endReason === 'died') return 'died (process gone, host taken over)';
      if (report.endReason === 'operator') return `ended by an operator (${report.endedBy ?? 'unknown'})`;
      return 'ended (reason unknown)';
    case 'rescued':
      return 'rescued (missed heartbeats)';
    case 'fenced':
      return 'fenced (missed heartbeats, process alive)';
  }
}

/** How an issue worked ended: its run's outcome and reason when it ran a job, else the claim's. */
export function describeWorked(issue: IssueWorked): string {
  if (issue.run === null) return issue.outcome ?? 'held';
  return issue.run.reason === null ? issue.run.outcome : `${issue.run.outcome} — ${issue.run.reason}`;
}

/**
 * The pid to show for a session: a `baton up` agent's own, once spawned, with the `baton up` that
 * ran it (the session's pid); else the session's pid, the process that started it.
 */
export function describePid(report: Pick<SessionReport, 'pid' | 'agentPid'>): string {
  return report.agentPid === null ? String(report.pid) : `${report.agentPid} (agent; baton up ${report.pid})`;
}
