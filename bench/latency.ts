/**
 * Latency: enqueue → claimed by an idle waiting worker. The enqueuer and the worker share the
 * process (one clock) but not a connection. Between samples the enqueuer waits a random 10-40 ms,
 * so the worker is idle when the job arrives. The time runs from just before the enqueue call to
 * the moment the worker holds the job (Baton: claimNext returned it; Graphile: the task handler
 * was called). Both wait for a wake-up rather than poll: Baton's idle worker on its store's
 * waiter (LISTEN/NOTIFY on PostgreSQL, the wake counter on SQLite), with `fallbackMs` as its
 * timeout; Graphile Worker on LISTEN/NOTIFY, with its 2 s poll as the fallback. Baton's worker
 * says it waits (claimNext's `waitMs`), as any idle pull worker should: the enqueue then claims
 * the job for it in its own commit, and the woken worker takes it with a read (decision 0024).
 */
import { hostname } from 'node:os';
import { makeWorkerUtils } from 'graphile-worker';
import { openStore } from '../src/store/open.js';
import { migrateGraphile, silentLogger, startGraphile } from './peers.js';
import { nowMs, percentile, progress, sleep } from './stats.js';

export const WARMUP = 5;

export interface LatencyRun {
  readonly p50: number;
  readonly p99: number;
}

/** Resolvers keyed by item, for the worker to report the moment it holds one. */
class Arrivals {
  private readonly waiting = new Map<string, (at: number) => void>();
  expect(key: string): Promise<number> {
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }
  arrived(key: string): void {
    const at = nowMs();
    this.waiting.get(key)?.(at);
    this.waiting.delete(key);
  }
}

async function sample(
  count: number,
  arrivals: Arrivals,
  enqueue: (key: string) => Promise<unknown>,
): Promise<LatencyRun> {
  const times: number[] = [];
  for (let index = 0; index < WARMUP + count; index++) {
    await sleep(10 + Math.random() * 30);
    const key = `lat-${index}-${Math.random().toString(36).slice(2, 8)}`;
    const arrived = arrivals.expect(key);
    const t0 = nowMs();
    await enqueue(key);
    const at = await arrived;
    if (index >= WARMUP) times.push(at - t0);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** Baton on either engine: `url` is a postgres:// URL or a SQLite path. */
export async function batonLatency(url: string, count: number, fallbackMs: number): Promise<LatencyRun> {
  const workerStore = await openStore(url);
  const enqueueStore = await openStore(url);
  const arrivals = new Arrivals();
  let stop = false;
  try {
    const session = await workerStore.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    const waiter = await workerStore.wakeups.waiter();
    const quit = new AbortController();
    const worker = (async (): Promise<void> => {
      while (!stop) {
        const job = await workerStore.jobs.claimNext({
          session: session.id,
          start: true,
          waitMs: fallbackMs,
        });
        if (job === null) {
          await waiter.wait(fallbackMs, quit.signal);
          continue;
        }
        arrivals.arrived(job.key);
        const guard = { id: job.id, session: session.id, epoch: job.epoch };
        await workerStore.jobs.finish({ ...guard, status: 'done' });
      }
    })();
    try {
      return await sample(count, arrivals, (key) => enqueueStore.jobs.enqueue({ key }));
    } finally {
      stop = true;
      quit.abort();
      await worker;
      waiter.close();
    }
  } finally {
    await workerStore.close();
    await enqueueStore.close();
  }
}

/** Graphile Worker with the throughput settings, idle on LISTEN until a job is added. */
export async function graphileLatency(url: string, count: number): Promise<LatencyRun> {
  await migrateGraphile(url);
  const arrivals = new Arrivals();
  const runner = await startGraphile(url, {
    noop: (payload) => Promise.resolve(arrivals.arrived((payload as { key: string }).key)),
  });
  const utils = await makeWorkerUtils({ connectionString: url, logger: silentLogger });
  try {
    return await sample(count, arrivals, (key) => utils.addJob('noop', { key }));
  } finally {
    await utils.release();
    await runner.stop();
  }
}

export interface LatencyRuns {
  readonly batonPg: LatencyRun[];
  readonly batonSqlite: LatencyRun[];
  readonly graphile: LatencyRun[];
}

/** Every system once per repetition, each on a fresh database or file. */
export async function measureLatency(
  onPg: <T>(label: string, work: (url: string) => Promise<T>) => Promise<T>,
  onFile: <T>(work: (path: string) => Promise<T>) => Promise<T>,
  samples: number,
  fallbackMs: number,
  reps: number,
): Promise<LatencyRuns> {
  const runs: LatencyRuns = { batonPg: [], batonSqlite: [], graphile: [] };
  const show = (latencyRuns: LatencyRun[]): string =>
    `${latencyRuns.at(-1)?.p50.toFixed(2)}/${latencyRuns.at(-1)?.p99.toFixed(2)}`;
  for (let rep = 1; rep <= reps; rep++) {
    runs.batonPg.push(await onPg('latbaton', (url) => batonLatency(url, samples, fallbackMs)));
    runs.graphile.push(await onPg('latgraphile', (url) => graphileLatency(url, samples)));
    runs.batonSqlite.push(await onFile((path) => batonLatency(path, samples, fallbackMs)));
    progress(
      `latency rep ${rep}/${reps} (p50/p99 ms): Baton PG ${show(runs.batonPg)}, ` +
        `Graphile ${show(runs.graphile)}, Baton SQLite ${show(runs.batonSqlite)}`,
    );
  }
  return runs;
}
