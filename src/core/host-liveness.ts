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

/** What judging a host needs of its runner session: which one, and its TTL. */
type RunnerSession = Pick<Session, 'id' | 'ttlMs'>;

function hostLiveness(
  host: { readonly session: number | null; readonly heartbeatAt: Instant },
  liveSessions: ReadonlyMap<number, RunnerSession>,
  now: Instant,
): HostLiveness {
  const session = host.session === null ? undefined : liveSessions.get(host.session);
  if (session === undefined) return 'down';
  return now - host.heartbeatAt > (session.ttlMs ?? DEFAULT_SILENCE_MS) ? 'silent' : 'live';
}

/** A host as an operator reads it: whether its `baton up` still serves it, and since when it is quiet. */
export interface HostJudgement {
  readonly liveness: HostLiveness;
  readonly lastReportAgeMs: DurationMs;
}

/**
 * Each host judged against its runner session's TTL at `now`, which must be the database's clock
 * (the one its reports were stamped with): a reader's own clock, skewed on another machine, would
 * call a live host silent, or a dead one live. `baton hosts`, the API and the dashboard all use it.
 */
export function judgeHosts<H extends { readonly session: number | null; readonly heartbeatAt: Instant }>(
  hosts: readonly H[],
  liveSessions: readonly RunnerSession[],
  now: Instant,
): (H & HostJudgement)[] {
  const sessions = new Map<number, RunnerSession>(liveSessions.map((session) => [session.id, session]));
  return hosts.map((host) => ({
    ...host,
    liveness: hostLiveness(host, sessions, now),
    lastReportAgeMs: Math.max(0, now - host.heartbeatAt),
  }));
}

/** A duration as people read it: `350 ms`, `4.2 s`, `12 min`, `3.5 h`. */
export function age(ms: DurationMs): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Whether a host takes work, as `baton hosts`, `baton status` and the dashboard say it. */
export type HostFlag = 'enabled' | 'draining' | 'drained' | 'standby' | 'disabled' | 'silent';

/**
 * `draining` while its `baton up` drains (SIGTERM: its agents finish, nothing new is placed),
 * `drained` once that process is gone and its session ended (the next `baton up` there enables it
 * again); `standby` for a disabled host whose `baton up` runs, `disabled` for one that does not.
 * `silent` for a disabled or draining host whose `baton up` stopped reporting with its session
 * still live (killed mid-drain, or paused): no drain ended there, and its jobs await rescue.
 * `draining` is optional for a server older than the drain, which never sends it, as `liveness` is
 * for one older still.
 */
export function hostFlag(host: {
  readonly enabled: boolean;
  readonly draining?: boolean | undefined;
  readonly liveness?: HostLiveness | undefined;
}): HostFlag {
  if (host.enabled) return 'enabled';
  if (host.liveness === 'silent') return 'silent';
  if (host.draining === true) return host.liveness === 'live' ? 'draining' : 'drained';
  return host.liveness === 'live' ? 'standby' : 'disabled';
}
