/**
 * Throughput: N no-op items drained through Baton's full path (drain-loop.ts, every transition
 * audited and fenced) by 8 concurrent workers on PostgreSQL, by 4 processes on SQLite, and by
 * the peers on the same PostgreSQL. Every system drains a fresh database each repetition, and
 * one repetition runs every system once, so a slower spell of the machine hits them alike.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { pgDurableRate, sqliteDurableRate } from './durable.js';
import { PEERS, drainPeer } from './peers.js';
import { dropDatabase, freshDatabase } from './pg-server.js';
import { seedBatonPg, seedBatonSqlite } from './seed.js';
import { runSqliteProcs } from './sqlite-procs.js';
import { drainLoop } from './drain-loop.js';
import { median, nowMs, progress } from './stats.js';

export const PG_WORKERS = 8;
export const SQLITE_PROCESSES = 4;
/** Workers per SQLite process: 8 in all, as on PostgreSQL; one process's workers share commits. */
export const SQLITE_WORKERS_PER_PROCESS = 2;

/** Items per second for Baton on PostgreSQL: `workers` async loops sharing one pool. */
export async function drainBatonPg(url: string, n: number, workers: number): Promise<number> {
  await seedBatonPg(url, n);
  const store = await openStore(url);
  try {
    const start = (): ReturnType<Store['sessions']['start']> =>
      store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    const sessions = await Promise.all(Array.from({ length: workers }, start));
    let first = Number.NaN;
    const counts = await Promise.all(
      sessions.map((s) => drainLoop(store, s.id, () => (first = first || nowMs()))),
    );
    const seconds = (nowMs() - first) / 1000;
    const total = counts.reduce((a, b) => a + b, 0);
    if (total !== n) throw new Error(`bench: Baton drained ${total} of ${n}`);
    return n / seconds;
  } finally {
    await store.close();
  }
}

/** Items per second for Baton on SQLite: `processes` processes on one file. */
export function drainBatonSqlite(n: number, processes: number): Promise<number> {
  return onTempFile(async (path) => {
    await seedBatonSqlite(path, n);
    const result = await runSqliteProcs(() => ['drain', path, String(SQLITE_WORKERS_PER_PROCESS)], processes);
    if (result.count !== n) throw new Error(`bench: Baton on SQLite drained ${result.count} of ${n}`);
    return n / result.seconds;
  });
}

/** A path for a SQLite file in a fresh temp folder, removed (with its WAL) afterwards. */
export async function onTempFile<T>(work: (path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  try {
    return await work(join(dir, 'baton.db'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ThroughputRuns {
  readonly batonPg: number[];
  readonly batonSqlite: number[];
  /** Jobs per second of each peer configuration (peers.ts, PEERS), by its name, per repetition. */
  readonly peers: Record<string, number[]>;
  /** The durable limits (commits/s), measured inside each repetition beside the drains they bound. */
  readonly pgDurable: number[];
  readonly sqliteDurable: number[];
}

export const noThroughput = (): ThroughputRuns => ({
  batonPg: [],
  batonSqlite: [],
  peers: Object.fromEntries(PEERS.map((p) => [p.name, []])),
  pgDurable: [],
  sqliteDurable: [],
});

export async function measureThroughput(
  serverUrl: string,
  plan: { readonly n: number; readonly sqliteN: number; readonly reps: number },
  durableMs: number,
): Promise<ThroughputRuns> {
  const { n, sqliteN, reps } = plan;
  const runs = noThroughput();
  const onPg = async (label: string, drain: (url: string) => Promise<number>): Promise<number> => {
    const url = await freshDatabase(serverUrl, label);
    try {
      return await drain(url);
    } finally {
      await dropDatabase(serverUrl, url);
    }
  };
  for (let rep = 1; rep <= reps; rep++) {
    runs.pgDurable.push(await onPg('durable', (url) => pgDurableRate(url, PG_WORKERS, durableMs)));
    runs.batonPg.push(await onPg('baton', (url) => drainBatonPg(url, n, PG_WORKERS)));
    for (const peer of PEERS) {
      runs.peers[peer.name]?.push(await onPg(peer.name.toLowerCase(), (url) => drainPeer(url, n, peer)));
    }
    runs.sqliteDurable.push(await onTempFile((path) => sqliteDurableRate(path, SQLITE_PROCESSES, durableMs)));
    runs.batonSqlite.push(await drainBatonSqlite(sqliteN, SQLITE_PROCESSES));
    const last = (xs: number[]): number => Math.round(xs[xs.length - 1] ?? Number.NaN);
    const peers = PEERS.map((p) => `${p.name} ${last(runs.peers[p.name] ?? [])}`).join(', ');
    progress(
      `throughput rep ${rep}/${reps} (per s): PG durable ${last(runs.pgDurable)} commits, ` +
        `Baton PG ${last(runs.batonPg)}, ${peers}; ` +
        `SQLite durable ${last(runs.sqliteDurable)} commits, Baton SQLite ${last(runs.batonSqlite)}`,
    );
  }
  return runs;
}

/** Per repetition, the fastest of the peer configurations named (jobs per second). */
export function bestOfPeers(runs: ThroughputRuns, names: readonly string[]): number[] {
  const reps = Math.max(0, ...names.map((name) => runs.peers[name]?.length ?? 0));
  return Array.from({ length: reps }, (_, i) =>
    Math.max(...names.map((name) => runs.peers[name]?.[i] ?? Number.NaN)),
  );
}

/** The per-repetition ratios a[i] / b[i]. */
export const ratiosOfRuns = (a: readonly number[], b: readonly number[]): number[] =>
  a.map((x, i) => x / (b[i] ?? Number.NaN));
/** The median of per-repetition ratios a[i] / b[i]. */
export const ratioOfRuns = (a: readonly number[], b: readonly number[]): number => median(ratiosOfRuns(a, b));
