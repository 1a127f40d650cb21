/**
 * What an agent integration (the MCP server, the Claude Code hooks) needs from Baton, as a small
 * port of use cases: over the local Coordinator (local-client.ts, through BATON_DB), or over the
 * HTTP API (http-client.ts, BATON_URL with a BATON_TOKEN scoped to the agent's session), chosen
 * by openAgentClient(), so neither the MCP tools nor the hooks know which.
 *
 * Expected outcomes (held, fenced) are returned values, as in the store; refusals throw
 * BatonErrors with a hint.
 */
import type { ClaimResult, FencedResult, Holder, ReleaseOutcome, ReleaseResult } from '../core/claim.js';
import type { EffectResult } from '../core/effect.js';
import type { Job } from '../core/job.js';
import type { Session, SessionId, SessionKind } from '../core/session.js';
import type { Task } from '../core/task.js';
import type { Instant } from '../core/time.js';

/** What `next` gave the session: a claimed task, or why none was free. */
export type NextResult =
  | { readonly ok: true; readonly task: Task; readonly epoch: number }
  | { readonly ok: false; readonly gated: readonly Task[] };

/** An escalation under a claim: the task now waits for a human, or the claim was no longer ours. */
export type EscalateResult =
  | { readonly ok: true; readonly task: Task; readonly jobId: number | null }
  | { readonly ok: false; readonly reason: 'fenced'; readonly current: Holder | null };

export interface ClaimRef {
  readonly key: string;
  readonly epoch: number;
}

export interface TaskView {
  readonly task: Task;
  /** Who holds the task now, or null when it is free. */
  readonly holder: Holder | null;
  /** Its recent jobs, active ones first. */
  readonly jobs: readonly Job[];
}

/** A live claim of the session, as the store has it, whichever process made it. */
export interface HeldClaim extends ClaimRef {
  readonly host: string;
  readonly claimedAt: Instant;
  /** The claim's own last heartbeat. */
  readonly heartbeatAt: Instant;
}

export interface SessionClaims {
  readonly claims: readonly HeldClaim[];
  /** The session the caller's agent token is bound to (HTTP); null without one (a database client). */
  readonly tokenSession: SessionId | null;
}

export interface AgentClient {
  /** Where Baton is reached, for messages: a database URL today, an HTTP URL later. */
  readonly target: string;
  startSession(params: {
    readonly kind: SessionKind;
    readonly name: string;
    readonly host: string;
    readonly pid: number;
  }): Promise<Session>;
  /** Ends the session and releases its claims (abandoned); false when it had ended already. */
  endSession(session: SessionId): Promise<boolean>;
  getSession(session: SessionId): Promise<Session>;
  /** The session's live claims in the store; null from an older server that cannot list them. */
  sessionClaims(session: SessionId): Promise<SessionClaims | null>;
  /** Liveness; with a claim named, also whether that claim is still current (`fenced` if not). */
  heartbeat(params: {
    readonly session: SessionId;
    readonly claim?: ClaimRef | undefined;
  }): Promise<FencedResult>;
  claim(params: { readonly key: string; readonly session: SessionId }): Promise<ClaimResult>;
  release(
    params: ClaimRef & { readonly session: SessionId; readonly outcome: ReleaseOutcome },
  ): Promise<ReleaseResult>;
  /** Records a side effect under the claim; an accepted one also counts as progress. */
  recordEffect(
    params: ClaimRef & { readonly session: SessionId; readonly kind: string; readonly payload?: unknown },
  ): Promise<EffectResult>;
  /** A progress mark of tool calls; false when the session is no longer live. */
  markToolCalls(params: {
    readonly session: SessionId;
    readonly count: number;
    readonly note: string;
  }): Promise<boolean>;
  showTask(key: string): Promise<TaskView>;
  /** Claims the most urgent eligible task for the session (open, behind no gate, free). */
  next(params: {
    readonly session: SessionId;
    readonly label?: string | undefined;
    readonly project?: string | undefined;
  }): Promise<NextResult>;
  /** Hands the task to a human under the session's claim: the claim and its job end `escalated`. */
  escalate(
    params: ClaimRef & { readonly session: SessionId; readonly reason: string },
  ): Promise<EscalateResult>;
  close(): Promise<void>;
}
