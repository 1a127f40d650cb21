/**
 * Heartbeats at fleet scale: the most sessions one store holds beating every 2 s with a p99
 * under 100 ms. N live agent sessions, each holding the claim on a task of its own (seeded in
 * bulk, fleet-seed.ts), beat as an agent's runner does: `sessions.heartbeat` naming the claim,
 * which proves the claim is still theirs. The beats of the N sessions are spread evenly over
 * each 2 s period and sent from one process through one store (on PostgreSQL its pool of 10
 * connections), each without waiting for the others. A beat's latency runs from the moment it
 * was due to the moment the store answered, so a beat that waits behind others, in the store
 * or on the event loop, counts its wait.
 *
 * The search doubles N from `start` while the p99 holds, then bisects between the last N that
 * held and the first that did not, down to `tolerance`. A trial runs one untimed period, then
 * `periods` timed ones.
 */
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { addClaimedSessions } from './fleet-seed.js';
import { nowMs, percentile, progress, sleep } from './stats.js';

export const BEAT_PERIOD_MS = 2_000;
export const P99_LIMIT_MS = 100;

export interface HeartbeatPlan {
  readonly start: number;
  /** The search stops here (the figure is then at least this). */
  readonly max: number;
  readonly periods: number;
  /** Bisection stops when the gap between held and failed is below this fraction. */
  readonly tolerance: number;
}

export interface HeartbeatResult {
  /** The most sessions that held p99 < 100 ms; 0 when even the smallest trial failed. */
  readonly sessions: number;
  /** Every trial: sessions and the p99 of their beats (ms). */
  readonly trials: readonly { readonly sessions: number; readonly p99: number }[];
}

interface Beater {
  readonly session: number;
  readonly key: string;
}

/** p99 (ms) of the beats of `beaters` over `periods` periods after one untimed. */
async function trial(store: Store, beaters: readonly Beater[], periods: number): Promise<number> {
  const beaterCount = beaters.length;
  const latencies: number[] = [];
  const pending = new Set<Promise<void>>();
  const failed: { error?: Error } = {};
  const t0 = nowMs();
  const total = (periods + 1) * beaterCount;
  const timedFrom = beaterCount;
  for (let beatIndex = 0; beatIndex < total; beatIndex++) {
    const due = t0 + (beatIndex * BEAT_PERIOD_MS) / beaterCount;
    const wait = due - nowMs();
    // Behind schedule, beats go out at once, but the loop still yields so answers are read.
    if (wait > 1) await sleep(wait);
    else await new Promise<void>((resolve) => setImmediate(resolve));
    const beater = beaters[beatIndex % beaterCount] as Beater;
    const beat = store.sessions
      .heartbeat({ session: beater.session, claim: { key: beater.key, epoch: 1 } })
      .then((answer) => {
        if (!answer.ok) throw new Error(`bench: session ${beater.session} was fenced`);
        if (beatIndex >= timedFrom) latencies.push(nowMs() - due);
      })
      .catch(
        (error: unknown) => void (failed.error ??= error instanceof Error ? error : new Error(String(error))),
      )
      .finally(() => pending.delete(beat));
    pending.add(beat);
  }
  await Promise.all(pending);
  if (failed.error !== undefined) throw failed.error;
  return percentile(latencies, 99);
}

/** The search on the database at `url` (a fresh one). */
export async function measureHeartbeats(
  url: string,
  plan: HeartbeatPlan,
  engine: string,
): Promise<HeartbeatResult> {
  const store = await openStore(url);
  const beaters: Beater[] = [];
  const trials: { sessions: number; p99: number }[] = [];
  const run = async (sessionCount: number): Promise<boolean> => {
    if (beaters.length < sessionCount)
      beaters.push(...(await addClaimedSessions(url, beaters.length, sessionCount - beaters.length)));
    const p99 = await trial(store, beaters.slice(0, sessionCount), plan.periods);
    trials.push({ sessions: sessionCount, p99 });
    progress(`heartbeats ${engine}: ${sessionCount} sessions, p99 ${p99.toFixed(1)} ms`);
    return p99 < P99_LIMIT_MS;
  };
  try {
    let held = 0;
    let failed = Number.POSITIVE_INFINITY;
    for (let sessionCount = plan.start; sessionCount <= plan.max; sessionCount *= 2) {
      if (!(await run(sessionCount))) {
        failed = sessionCount;
        break;
      }
      held = sessionCount;
    }
    // The first trial failed: halve until one holds.
    for (
      let sessionCount = Math.floor(plan.start / 2);
      held === 0 && sessionCount >= 10;
      sessionCount = Math.floor(sessionCount / 2)
    ) {
      if (await run(sessionCount)) held = sessionCount;
      else failed = sessionCount;
    }
    while (held > 0 && Number.isFinite(failed) && (failed - held) / held > plan.tolerance) {
      const mid = Math.round((held + failed) / 2);
      if (await run(mid)) held = mid;
      else failed = mid;
    }
    return { sessions: held, trials };
  } finally {
    await store.close();
  }
}
