/**
 * A session is one agent, human or daemon process taking part. Its heartbeat is the liveness
 * signal that recovery reads; an ended session keeps its row for the audit trail.
 *
 * Each session may declare its time-to-live: how long it may stay silent and still be live. A
 * human at a terminal heartbeats every half hour and declares hours (HUMAN_TTL_DEFAULT_MS); an
 * agent heartbeats every few seconds. Recovery rescues a session only once its own TTL has
 * passed, and a claim may take over a task whose holder's TTL has passed (no leader needed),
 * both judged on the database clock. A session without one is held to the rescuer's
 * `--stale-after`, and to SESSION_TTL_FALLBACK_MS by a claim.
 */
import type { DurationMs, Instant } from './time.js';

export type SessionId = number;

export const SESSION_KINDS = ['agent', 'human', 'daemon'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

export type SessionState = 'live' | 'ended' | 'stale';

/**
 * Why a session ended: `stopped` by itself or its runner (a clean stop, Ctrl-C included);
 * `died`: its process was gone and a restarted `baton up` on its host took over (it was
 * SIGKILLed, OOM-killed, or its machine rebooted); `operator`: someone else ended it with
 * `baton session end` (who: `endedBy`); `rescued`: recovery declared it stale after its heartbeats
 * stopped (its state `stale`). Sessions ended before migration 0027, and sessions rescued before
 * 0028, recorded no reason.
 */
export type SessionEndReason = 'stopped' | 'died' | 'operator' | 'rescued';

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
  /** Why it ended (null while live, or when it ended before migration 0027 / was rescued before 0028). */
  readonly endReason: SessionEndReason | null;
  /** Who ended it, in words (`alice@box`, `token t1 (ci)`), when an operator did; else null. */
  readonly endedBy: string | null;
  /** How long the session may stay silent and still be live; null when it declared none. */
  readonly ttlMs: DurationMs | null;
}

/**
 * A session as sessions.list reads it: with an agent's own pid once its runner spawned it (its
 * `job:spawned` row; `pid` is the `baton up` that ran it), as the session report has it; else null.
 */
export interface ListedSession extends Session {
  readonly agentPid: number | null;
}

/** What sessions.list reads. */
export interface SessionQuery {
  readonly liveOnly?: boolean | undefined;
  /**
   * Look up each agent's own pid (a ledger read per agent session); otherwise `agentPid` is null.
   * `session list` shows it; the fleet's readers (hosts, takeover) need only the sessions.
   */
  readonly agentPids?: boolean | undefined;
}

/** A human's TTL when `baton session start --kind human` names none: a working day. */
export const HUMAN_TTL_DEFAULT_MS: DurationMs = 8 * 60 * 60 * 1000;
/**
 * What a claim holds a session without a TTL to, when no leader rescued it first (a leader
 * rescues it after its `--stale-after`, 10 s by default). Generous on purpose: such a session
 * never said how often it heartbeats, and taking a task from a slow but live agent is worse than
 * freeing a dead one's a few minutes late. A session that wants faster takeover declares a TTL.
 */
export const SESSION_TTL_FALLBACK_MS: DurationMs = 5 * 60_000;
export const SESSION_TTL_MIN_MS: DurationMs = 1_000;
export const SESSION_TTL_MAX_MS: DurationMs = 7 * 24 * 60 * 60 * 1000;

/** The TTL a session starts with: the one asked for, else a human's default, else none. */
export function sessionTtlMs(kind: SessionKind, asked: DurationMs | undefined): DurationMs | null {
  if (asked !== undefined) return asked;
  return kind === 'human' ? HUMAN_TTL_DEFAULT_MS : null;
}

/** Whether a session last heard from at `heartbeatAt` has passed its TTL at `now`. */
export function hasExpired(heartbeatAt: Instant, ttlMs: DurationMs | null, now: Instant): boolean {
  return now - heartbeatAt > (ttlMs ?? SESSION_TTL_FALLBACK_MS);
}
