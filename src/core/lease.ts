/**
 * A lease is a named, time-limited hold (the dispatcher role). The database grants it when it is
 * free or expired, bumping the term; only the exact (holder, term) may renew or resign it, and
 * expiry is judged on the database clock alone. A lease is a liveness device: safety comes from
 * writes carrying the term, which the store refuses once a newer term exists.
 */
import type { DurationMs, Instant } from './time.js';

/** The lease that makes one `baton up` the dispatcher leader. */
export const DISPATCHER_LEASE = 'dispatcher';

export interface Lease {
  readonly name: string;
  readonly holder: string | null;
  readonly term: number;
  readonly acquiredAt: Instant;
  readonly expiresAt: Instant;
}

export type LeaseResult =
  | { readonly ok: true; readonly lease: Lease }
  | { readonly ok: false; readonly reason: 'held'; readonly lease: Lease }
  | { readonly ok: false; readonly reason: 'lost'; readonly lease: Lease | null };

/**
 * How long the holder may act on its lease, on its own monotonic clock. Anchored at the moment
 * the request was sent, not answered, so a slow reply can only shorten the window.
 */
export function trustedUntil(sentAtMonotonicMs: number, ttlMs: DurationMs, marginMs: DurationMs): number {
  return sentAtMonotonicMs + ttlMs - marginMs;
}

/** Renew at about a third of the TTL, so two renewals can fail before the lease lapses. */
export function renewIntervalMs(ttlMs: DurationMs): DurationMs {
  return Math.max(50, Math.floor(ttlMs / 3));
}
