/**
 * Whether a host's `baton up` still serves it, as an operator reads it: the host row keeps its
 * last report for ever, so a host whose runner died looks like any other unless someone compares
 * its report with the runner session's TTL. `live` while its session is live and reported within
 * its TTL; `silent` when the session is still live on paper but has not reported for longer (a
 * runner killed with no leader left to rescue it, or paused); `down` once its session ended or
 * was rescued (stopped, taken over or declared stale).
 */
import type { Session } from './session.js';
import type { DurationMs, Instant } from './time.js';

export type HostLiveness = 'live' | 'silent' | 'down';

/** A runner without a TTL of its own is judged by `baton up`'s default `--stale-after`. */
const DEFAULT_SILENCE_MS: DurationMs = 10_000;

export function hostLiveness(
  host: { readonly session: number | null; readonly heartbeatAt: Instant },
  liveSessions: ReadonlyMap<number, Session>,
  now: Instant,
): HostLiveness {
  const session = host.session === null ? undefined : liveSessions.get(host.session);
  if (session === undefined) return 'down';
  return now - host.heartbeatAt > (session.ttlMs ?? DEFAULT_SILENCE_MS) ? 'silent' : 'live';
}

/** A duration as people read it: `350 ms`, `4.2 s`, `12 min`, `3.5 h`. */
export function age(ms: DurationMs): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
