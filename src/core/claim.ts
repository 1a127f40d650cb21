/**
 * A claim is the per-task mutex (docs/architecture.md#claim-per-task). The database grants it in
 * one guarded statement, bumps the task's epoch with every grant and keeps at most one live claim
 * per task through a unique partial index. Every later write about the claim presents (session,
 * epoch); a write with any other pair is refused: the writer was fenced off.
 */
import type { Instant } from './time.js';
import type { SessionId } from './session.js';

/**
 * `escalated`: the task was handed to a human; `expired`: the session passed its TTL and a
 * claim by another session took the task over (no leader needed).
 */
export type ClaimOutcome =
  'done' | 'failed' | 'released' | 'abandoned' | 'recovered' | 'escalated' | 'expired';

/** The outcomes a holder may report itself; the others are written by Baton. */
export const RELEASE_OUTCOMES = ['done', 'failed', 'released'] as const;
export type ReleaseOutcome = (typeof RELEASE_OUTCOMES)[number];

export interface Claim {
  readonly key: string;
  readonly session: SessionId;
  readonly epoch: number;
  readonly claimedAt: Instant;
  readonly heartbeatAt: Instant;
  readonly releasedAt: Instant | null;
  readonly outcome: ClaimOutcome | null;
}

/** Who holds a thing, as told to a loser. */
export interface Holder {
  readonly session: SessionId;
  readonly host: string;
  readonly since: Instant;
  readonly epoch: number;
}

export type ClaimResult =
  | {
      readonly ok: true;
      readonly claim: Claim;
      /** false when the session already held it. */
      readonly granted: boolean;
    }
  | { readonly ok: false; readonly reason: 'held'; readonly holder: Holder };

/** Outcome of a write that presents (session, epoch): release, heartbeat. */
export type FencedResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: 'fenced';
      /** Who holds the task now, whoever asked (an ended session too), or null when no one does. */
      readonly current: Holder | null;
      /** Present when the caller's session is no longer live (ended, or rescued as stale). */
      readonly sessionEnded?: true;
    };

/**
 * A release's answer over HTTP: done, fenced, or `released: false`, kept: a run's own token
 * releasing its run's claim `done` leaves it to the runner, which records the job done by the
 * agent's exit (http/claims.ts, decision 0051).
 */
export type ReleaseResult = FencedResult | { readonly ok: true; readonly released: false };
