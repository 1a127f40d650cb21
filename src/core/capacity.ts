/**
 * Host capacity: the arithmetic that chooses a host for a placement. (A placement itself, the
 * dispatcher's term-fenced assignment of a job to a host, is the store's: each engine's placement.ts.)
 * RAM-aware (the seed's server capacity table, made live): the dispatcher puts the
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
  /**
   * Whether its runner can run a job enqueued without a command (its `baton up` has an
   * --agent-command); null or left out: not said (a runner older than migration 0044), taken as able.
   */
  readonly agentCommand?: boolean | null | undefined;
}

/**
 * RAM a host can still promise: the lesser of what the kernel says is free (less what was placed
 * and has not started yet) and what the budgets leave of the total after the reserve.
 */
export function ramAvailableMb(capacity: HostCapacity): number {
  const measured = capacity.ramFreeMb - capacity.ramPendingMb;
  const budgeted = capacity.ramTotalMb - capacity.ramReservedMb - capacity.ramPromisedMb;
  return Math.max(0, Math.min(measured, budgeted));
}

/**
 * The host as the next placement of the same pass sees it, once a job needing `ramMb` was placed
 * on it: one more active job, its budget promised, and pending (not started, so not yet visible
 * in the measured free RAM) until the host's next heartbeat.
 */
export function afterPlacement(capacity: HostCapacity, ramMb: number): HostCapacity {
  return {
    ...capacity,
    jobsActive: capacity.jobsActive + 1,
    ramPromisedMb: capacity.ramPromisedMb + ramMb,
    ramPendingMb: capacity.ramPendingMb + ramMb,
  };
}

/**
 * The fleet as a placement sees it: the enabled hosts that have a free slot (the only ones a job
 * can go to), in name order, and what the others tell about why a job fits nowhere. A store can
 * read it without the hosts that are full or disabled (dispatch.fleet), so a saturated fleet is
 * a small answer whatever its size.
 */
export interface Fleet {
  /** The enabled hosts with fewer active jobs than slots, in name order. */
  readonly open: readonly HostCapacity[];
  /** Every registered host. */
  readonly hosts: number;
  /** The enabled ones. */
  readonly enabled: number;
  /** The newest heartbeat of an enabled host; null when none is enabled. */
  readonly lastBeatAt: Instant | null;
  /** The largest RAM an enabled host can ever promise (its total less its reserve); null when none is enabled. */
  readonly largestBudgetMb: number | null;
}

/** The fleet of `hosts` (as hosts.list() gives them: in name order). */
export function fleetOf(hosts: readonly HostCapacity[]): Fleet {
  const enabled = hosts.filter((host) => host.enabled);
  return {
    open: enabled.filter((host) => host.jobsActive < host.slotsMax),
    hosts: hosts.length,
    enabled: enabled.length,
    lastBeatAt: enabled.reduce<Instant | null>(
      (latest, host) => (latest === null || host.heartbeatAt > latest ? host.heartbeatAt : latest),
      null,
    ),
    largestBudgetMb: enabled.reduce<number | null>(
      (largest, host) => Math.max(largest ?? 0, host.ramTotalMb - host.ramReservedMb),
      null,
    ),
  };
}

/**
 * Why a job enqueued without a command waits (docs/decisions/0047-jobs-wait-for-an-agent-command.md):
 * every live host with a free slot has a runner without an agent command.
 */
export const WAITING_FOR_AGENT_COMMAND =
  'waiting for a host with an agent command: start baton up with --agent-command, ' +
  'take it with `baton job next`, or enqueue with --command';

/**
 * Why a job enqueued without a command waits while a live host has an agent command: every such
 * host is full (decision 0047, review fixes). The class is 'slots' (core/waiting.ts).
 */
export const WAITING_FOR_AGENT_SLOT =
  'every live host with an agent command is at its job limit (a job without --command runs only there)';

/**
 * Chooses the host for a job needing `ramMb` (0 when unknown): the index in `fleet.open` of the
 * host chosen, or why none fits. Among eligible hosts (live, with a free slot and the RAM), a
 * fresh one before one gone quiet, then the one with the most RAM available, then the fewest
 * active jobs, then by name, so placement is deterministic. One pass over the open hosts without
 * allocating, since a dispatcher pass asks it for each of its jobs over a fleet of thousands of
 * hosts. A host of `open` may have filled up during the pass (afterPlacement): it is passed over.
 * A job without a command of its own (`needsAgentCommand`) is placed only on a host whose runner
 * has one (or did not say: a host not registered again since migration 0044); when the only live
 * hosts with a free slot have none, it waits with WAITING_FOR_AGENT_SLOT.
 */
export function placeOnFleet(
  ramMb: number,
  fleet: Fleet,
  now: Instant,
  staleAfterMs: number,
  needsAgentCommand = false,
): number | string {
  if (fleet.enabled === 0) {
    return fleet.hosts === 0 ? 'no host has registered: run `baton up`' : 'every host is disabled (standby)';
  }
  if (fleet.lastBeatAt === null || now - fleet.lastBeatAt > staleAfterMs) return 'no enabled host is live';
  if (fleet.largestBudgetMb !== null && ramMb > fleet.largestBudgetMb) {
    return (
      `needs ${ramMb} MB, more than any enabled host can ever give (the largest: ${fleet.largestBudgetMb} MB, ` +
      'its RAM less its reserve): `baton cancel` it and enqueue with a smaller --ram-mb, or add a larger host'
    );
  }
  let chosen = -1;
  let chosenRam = 0;
  let chosenFresh = false;
  let roomiest = -1;
  let roomiestRam = 0;
  let withoutAgentCommand = 0;
  for (let index = 0; index < fleet.open.length; index++) {
    const capacity = fleet.open[index] as HostCapacity;
    const age = now - capacity.heartbeatAt;
    if (age > staleAfterMs || capacity.jobsActive >= capacity.slotsMax) continue;
    if (needsAgentCommand && capacity.agentCommand === false) {
      withoutAgentCommand++;
      continue;
    }
    const ram = ramAvailableMb(capacity);
    if (roomiest < 0 || ram > roomiestRam) [roomiest, roomiestRam] = [index, ram];
    if (ram < ramMb) continue;
    const fresh = age <= staleAfterMs / 2;
    if (
      chosen < 0 ||
      better(capacity, fresh, ram, fleet.open[chosen] as HostCapacity, chosenFresh, chosenRam)
    ) {
      [chosen, chosenRam, chosenFresh] = [index, ram, fresh];
    }
  }
  if (chosen >= 0) return chosen;
  // The pass reads such a job only while a host with an agent command had a free slot: it is full now.
  if (roomiest < 0 && withoutAgentCommand > 0) return WAITING_FOR_AGENT_SLOT;
  if (roomiest < 0) return 'every live host is at its job limit';
  const name = (fleet.open[roomiest] as HostCapacity).name;
  return `needs ${ramMb} MB; the most free is ${roomiestRam} MB on ${name}`;
}

/**
 * Whether `candidate` goes before `chosen`: a fresh host (one that reported within half the stale threshold,
 * a runner beating on time) before one gone quiet, which is live but may have died and gets work
 * only when no fresh host fits (issue 14, item 7); then more RAM available, fewer active jobs,
 * and the name in code-unit order (the order hosts.list() gives, PostgreSQL's "C" collation).
 */
function better(
  candidate: HostCapacity,
  candidateFresh: boolean,
  candidateRam: number,
  chosen: HostCapacity,
  chosenFresh: boolean,
  chosenRam: number,
): boolean {
  if (candidateFresh !== chosenFresh) return candidateFresh;
  if (candidateRam !== chosenRam) return candidateRam > chosenRam;
  if (candidate.jobsActive !== chosen.jobsActive) return candidate.jobsActive < chosen.jobsActive;
  return candidate.name < chosen.name;
}
