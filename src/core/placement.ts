/**
 * RAM-aware placement (the seed's server capacity table, made live): the dispatcher puts the
 * top queued job on an enabled, live host that has a free slot and enough free RAM for the job's
 * estimate. A job that fits nowhere waits, with a reason a human can act on.
 */
import type { Instant } from './time.js';

export interface HostCapacity {
  readonly name: string;
  readonly enabled: boolean;
  /** When the host's runner last reported; a host silent for longer than staleAfterMs is dead. */
  readonly heartbeatAt: Instant;
  readonly ramTotalMb: number;
  /** Kept back for the machine itself; never offered to jobs. */
  readonly ramReservedMb: number;
  /** Free RAM the runner measured at its last heartbeat. */
  readonly ramFreeMb: number;
  readonly slotsMax: number;
  /** Jobs claimed or running on the host now. */
  readonly jobsActive: number;
  /** The RAM budgets of the jobs claimed or running on the host. */
  readonly ramPromisedMb: number;
  /** The budgets of jobs placed but not started yet: not visible in ramFreeMb. */
  readonly ramPendingMb: number;
}

export type Placement =
  { readonly ok: true; readonly host: string } | { readonly ok: false; readonly reason: string };

/**
 * RAM a host can still promise: the lesser of what the kernel says is free (less what was placed
 * and has not started yet) and what the budgets leave of the total after the reserve.
 */
export function ramAvailableMb(h: HostCapacity): number {
  const measured = h.ramFreeMb - h.ramPendingMb;
  const budgeted = h.ramTotalMb - h.ramReservedMb - h.ramPromisedMb;
  return Math.max(0, Math.min(measured, budgeted));
}

function isLive(h: HostCapacity, now: Instant, staleAfterMs: number): boolean {
  return now - h.heartbeatAt <= staleAfterMs;
}

/**
 * A host that reported within half the stale threshold: a runner beating on time. One silent for
 * longer is still live but may have died; it gets work only when no fresh host fits, so jobs are
 * not placed, one after another, on a host that crashed a moment ago (issue 14, item 7).
 */
function isFresh(h: HostCapacity, now: Instant, staleAfterMs: number): boolean {
  return now - h.heartbeatAt <= staleAfterMs / 2;
}

/**
 * Chooses the host for a job needing `ramMb` (0 when unknown): among eligible hosts, a fresh one
 * before one gone quiet, then the one with the most RAM available, then the fewest active jobs,
 * then by name, so placement is deterministic.
 */
export function placeJob(
  ramMb: number,
  hosts: readonly HostCapacity[],
  now: Instant,
  staleAfterMs: number,
): Placement {
  const enabled = hosts.filter((h) => h.enabled);
  if (enabled.length === 0) {
    return {
      ok: false,
      reason:
        hosts.length === 0 ? 'no host has registered: run `baton up`' : 'every host is disabled (standby)',
    };
  }
  const live = enabled.filter((h) => isLive(h, now, staleAfterMs));
  if (live.length === 0) return { ok: false, reason: 'no enabled host is live' };
  const withSlot = live.filter((h) => h.jobsActive < h.slotsMax);
  if (withSlot.length === 0) return { ok: false, reason: 'every live host is at its job limit' };
  const fitting = withSlot.filter((h) => ramAvailableMb(h) >= ramMb);
  if (fitting.length === 0) {
    const best = withSlot.reduce((a, b) => (ramAvailableMb(b) > ramAvailableMb(a) ? b : a));
    return {
      ok: false,
      reason: `needs ${ramMb} MB; the most free is ${ramAvailableMb(best)} MB on ${best.name}`,
    };
  }
  const fresh = (h: HostCapacity): number => (isFresh(h, now, staleAfterMs) ? 1 : 0);
  const chosen = [...fitting].sort(
    (a, b) =>
      fresh(b) - fresh(a) ||
      ramAvailableMb(b) - ramAvailableMb(a) ||
      a.jobsActive - b.jobsActive ||
      a.name.localeCompare(b.name),
  )[0];
  return chosen === undefined ? { ok: false, reason: 'no host fits' } : { ok: true, host: chosen.name };
}
