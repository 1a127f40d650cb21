/**
 * The dispatcher tick at fleet scale: the real Dispatcher (src/daemon/dispatcher.ts), leading
 * under a real LeaderElector, ticked by hand against a bulk-seeded store (fleet-seed.ts) with
 * `finished` done jobs in the table and `queued` jobs waiting. Hosts are added in tiers
 * (10, 100, then `hosts`), each with `active` running jobs:
 *  - a placing tick: every host has free slots, so each tick places a full batch (50 jobs, the
 *    dispatcher's default), as a set as the dispatcher does (docs/decisions/0016); timed at every tier on PostgreSQL
 *    (`byHosts`), at the last tier on both engines (`placing`);
 *  - a saturated tick: every host is at its job limit, so a tick reads the queue and the hosts,
 *    places nothing and (after its first pass, untimed) writes nothing.
 * The first tick after the leader is elected (it also sweeps for stale sessions) is not timed.
 * A figure is the median of `ticks` timed ticks.
 */
import { DEFAULT_RETRY_POLICY } from '../src/core/retry.js';
import { systemClock } from '../src/daemon/clock.js';
import { Dispatcher } from '../src/daemon/dispatcher.js';
import { LeaderElector } from '../src/daemon/leader-elector.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { addHosts, seedHistory, setSlots } from './fleet-seed.js';
import { median, nowMs, progress, sleep } from './stats.js';

export interface FleetPlan {
  /** Host tiers, ascending; the last is the fleet of the `placing` and `saturated` figures. */
  readonly tiers: readonly number[];
  readonly activePerHost: number;
  readonly queued: number;
  readonly finished: number;
  readonly ticks: number;
}

export interface TickResult {
  readonly placing: number;
  readonly saturated: number;
  /** Placing tick by number of hosts. */
  readonly byHosts: Readonly<Record<string, number>>;
  /** Every timed tick, by figure, for the report. */
  readonly runs: Readonly<Record<string, readonly number[]>>;
  readonly seedSeconds: number;
}

/** Slots a host offers while the placing ticks run: never the limit. */
const OPEN_SLOTS = 1_000_000;
/** No seeded host or session goes stale while the bench runs. */
const STALE_AFTER_MS = 3_600_000;

/** A dispatcher that leads; `check` throws what its ticks reported (a failure, a fence). */
interface Leading {
  readonly dispatcher: Dispatcher;
  check(): void;
  stop(): Promise<void>;
}

async function leading(store: Store): Promise<Leading> {
  const holder = `bench-${process.pid}`;
  const elector = new LeaderElector({
    store,
    holder,
    clock: systemClock,
    ttlMs: 60_000,
    retryIntervalMs: 50,
  });
  elector.start();
  const deadline = nowMs() + 30_000;
  while (elector.leaderTerm() === null) {
    if (nowMs() > deadline) throw new Error('bench: the dispatcher bench never took the lease');
    await sleep(10);
  }
  const dispatcher = new Dispatcher({
    store,
    elector,
    holder,
    clock: systemClock,
    intervalMs: 1_000,
    staleAfterMs: STALE_AFTER_MS,
    recoveryIntervalMs: 3_600_000,
    policy: DEFAULT_RETRY_POLICY,
  });
  let failure: Error | null = null;
  dispatcher.on('failed', (error) => (failure = error instanceof Error ? error : new Error(String(error))));
  dispatcher.on('fenced', () => (failure = new Error('bench: a dispatcher tick was fenced')));
  // Untimed: the first tick also sweeps for stale sessions.
  await dispatcher.tick();
  return {
    dispatcher,
    check: () => {
      if (failure !== null) throw failure;
    },
    stop: () => elector.stop(),
  };
}

async function timedTicks(leader: Leading, ticks: number, placing: boolean): Promise<number[]> {
  const { dispatcher } = leader;
  const runs: number[] = [];
  let placed = 0;
  const count = (): void => void placed++;
  dispatcher.on('placed', count);
  try {
    for (let index = 0; index < ticks; index++) {
      const before = placed;
      const t0 = nowMs();
      await dispatcher.tick();
      runs.push(nowMs() - t0);
      leader.check();
      if (placing && placed === before) throw new Error('bench: a placing tick placed nothing');
      if (!placing && placed !== before) throw new Error('bench: a saturated tick placed a job');
    }
  } finally {
    dispatcher.off('placed', count);
  }
  return runs;
}

/** Every tier's placing tick, then the saturated tick at the last tier, on the database at `url`. */
export async function measureTicks(url: string, plan: FleetPlan, engine: string): Promise<TickResult> {
  const t0 = nowMs();
  await seedHistory(url, { queued: plan.queued, finished: plan.finished });
  const seedSeconds = (nowMs() - t0) / 1000;
  progress(
    `dispatch ${engine}: seeded ${plan.finished} finished and ${plan.queued} queued jobs in ` +
      `${seedSeconds.toFixed(1)} s`,
  );
  const runs: Record<string, number[]> = {};
  const byHosts: Record<string, number> = {};
  let hosts = 0;
  for (const tier of plan.tiers) {
    await addHosts(url, { from: hosts + 1, to: tier }, plan.activePerHost, OPEN_SLOTS);
    hosts = tier;
    runs[`placing${tier}`] = await ticking(url, (leader) => timedTicks(leader, plan.ticks, true));
    byHosts[String(tier)] = median(runs[`placing${tier}`] ?? []);
    progress(`dispatch ${engine}: placing tick at ${tier} hosts ${byHosts[String(tier)]?.toFixed(1)} ms`);
  }
  await setSlots(url, 'full');
  runs.saturated = await ticking(url, async (leader) => {
    await timedTicks(leader, 1, false); // untimed: the first saturated pass records why jobs wait
    return timedTicks(leader, plan.ticks, false);
  });
  const last = String(plan.tiers.at(-1));
  const result = {
    placing: byHosts[last] ?? Number.NaN,
    saturated: median(runs.saturated),
    byHosts,
    runs,
    seedSeconds,
  };
  progress(`dispatch ${engine}: saturated tick at ${last} hosts ${result.saturated.toFixed(1)} ms`);
  return result;
}

/** A store with a leading dispatcher for `work`, closed afterwards. */
async function ticking<T>(url: string, work: (leader: Leading) => Promise<T>): Promise<T> {
  const store = await openStore(url);
  try {
    const leader = await leading(store);
    try {
      return await work(leader);
    } finally {
      await leader.stop();
    }
  } finally {
    await store.close();
  }
}
