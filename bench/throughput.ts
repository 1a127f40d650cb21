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
import { DRAIN_BATCH, drainLoop } from './drain-loop.js';
import { withSealer } from './ledger-on.js';
import { median, nowMs, progress } from './stats.js';

export const PG_WORKERS = 8;
/**
 * Baton's batch loops on PostgreSQL: two, so one's statement runs while the other's answer is
 * handled, as Graphile's best configuration runs one fetcher feeding its 8 handlers. Eight loops
 * of big batches ran eight heavy statements at once on two cores and timed out (docs/benchmarks.md).
 */
export const PG_BATCH_LOOPS = 2;
export const SQLITE_PROCESSES = 4;
/** Workers per SQLite process: 8 in all, as on PostgreSQL; one process's workers share commits. */
export const SQLITE_WORKERS_PER_PROCESS = 2;

/** A drain's rate, and the rows the background sealer sealed meanwhile (tamper evidence on). */
export interface Drained {
  readonly rate: number;
  readonly sealedDuring: number | null;
}

/**
 * Runs a seeded drain of `items` with the ledger's sealer beside it (ledger-on.ts), or without.
 * With it, the rate counts the time the sealer took after the drain to seal what was left.
 */
async function drained(
  url: string,
  items: number,
  ledger: boolean,
  drain: () => Promise<number>,
): Promise<Drained> {
  if (!ledger) return { rate: await drain(), sealedDuring: null };
  const { result, sealing } = await withSealer(url, drain);
  const seconds = items / result + sealing.catchUpMs / 1000;
  return { rate: items / seconds, sealedDuring: sealing.rowsSealedDuring };
}

/** Items per second for Baton on PostgreSQL: `workers` async loops sharing one pool. */
export async function drainBatonPg(
  url: string,
  items: number,
  workers: number,
  ledger = false,
  batch = DRAIN_BATCH,
): Promise<Drained> {
  await seedBatonPg(url, items);
  return drained(url, items, ledger, () => drainSeededPg(url, items, workers, batch));
}

/** Items per second for Baton on PostgreSQL, its queue already seeded (seedBatonPg). */
export async function drainSeededPg(
  url: string,
  items: number,
  workers: number,
  batch: number,
): Promise<number> {
  const store = await openStore(url);
  try {
    const start = (): ReturnType<Store['sessions']['start']> =>
      store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    const sessions = await Promise.all(Array.from({ length: workers }, start));
    let first = Number.NaN;
    const counts = await Promise.all(
      sessions.map((session) => drainLoop(store, session.id, () => (first = first || nowMs()), batch)),
    );
    const seconds = (nowMs() - first) / 1000;
    const total = counts.reduce((sum, part) => sum + part, 0);
    if (total !== items) throw new Error(`bench: Baton drained ${total} of ${items}`);
    return items / seconds;
  } finally {
    await store.close();
  }
}

/** Items per second for Baton on SQLite: `processes` processes on one file. */
export function drainBatonSqlite(items: number, processes: number, ledger = false): Promise<Drained> {
  return onTempFile(async (path) => {
    await seedBatonSqlite(path, items);
    return drained(path, items, ledger, async () => {
      const result = await runSqliteProcs(
        () => ['drain', path, String(SQLITE_WORKERS_PER_PROCESS)],
        processes,
      );
      if (result.count !== items)
        throw new Error(`bench: Baton on SQLite drained ${result.count} of ${items}`);
      return items / result.seconds;
    });
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
  /** Baton with tamper evidence on: the ledger's sealer running beside the drain. */
  readonly batonPg: number[];
  readonly batonSqlite: number[];
  /** Jobs per second of each peer configuration (peers.ts, PEERS), by its name, per repetition. */
  readonly peers: Record<string, number[]>;
  /** The same drains with tamper evidence off (no key, no sealer): ledgerOverhead = off ÷ on. */
  readonly batonPgOff: number[];
  readonly batonSqliteOff: number[];
  /** Rows the sealer sealed during each "on" drain: it was at work, not idle. */
  readonly pgSealedDuring: number[];
  readonly sqliteSealedDuring: number[];
  /** The durable limits (commits/s), measured inside each repetition beside the drains they bound. */
  readonly pgDurable: number[];
  readonly sqliteDurable: number[];
}

export const noThroughput = (): ThroughputRuns => ({
  batonPg: [],
  batonSqlite: [],
  peers: Object.fromEntries(PEERS.map((peer) => [peer.name, []])),
  batonPgOff: [],
  batonSqliteOff: [],
  pgSealedDuring: [],
  sqliteSealedDuring: [],
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
  const onPg = async <T>(label: string, drain: (url: string) => Promise<T>): Promise<T> => {
    const url = await freshDatabase(serverUrl, label);
    try {
      return await drain(url);
    } finally {
      await dropDatabase(serverUrl, url);
    }
  };
  const pg = async (ledger: boolean): Promise<void> => {
    const outcome = await onPg(ledger ? 'baton' : 'baton_off', (url) =>
      drainBatonPg(url, n, PG_BATCH_LOOPS, ledger),
    );
    (ledger ? runs.batonPg : runs.batonPgOff).push(outcome.rate);
    if (ledger) runs.pgSealedDuring.push(outcome.sealedDuring ?? 0);
  };
  const sqlite = async (ledger: boolean): Promise<void> => {
    const outcome = await drainBatonSqlite(sqliteN, SQLITE_PROCESSES, ledger);
    (ledger ? runs.batonSqlite : runs.batonSqliteOff).push(outcome.rate);
    if (ledger) runs.sqliteSealedDuring.push(outcome.sealedDuring ?? 0);
  };
  for (let rep = 1; rep <= reps; rep++) {
    // Tamper evidence on and off back to back, in alternating order, so neither always runs first.
    const order = rep % 2 === 1 ? [true, false] : [false, true];
    runs.pgDurable.push(await onPg('durable', (url) => pgDurableRate(url, PG_WORKERS, durableMs)));
    for (const ledger of order) await pg(ledger);
    for (const peer of PEERS) {
      runs.peers[peer.name]?.push(await onPg(peer.name.toLowerCase(), (url) => drainPeer(url, n, peer)));
    }
    runs.sqliteDurable.push(await onTempFile((path) => sqliteDurableRate(path, SQLITE_PROCESSES, durableMs)));
    for (const ledger of order) await sqlite(ledger);
    const last = (xs: number[]): number => Math.round(xs[xs.length - 1] ?? Number.NaN);
    const peers = PEERS.map((peer) => `${peer.name} ${last(runs.peers[peer.name] ?? [])}`).join(', ');
    progress(
      `throughput rep ${rep}/${reps} (per s): PG durable ${last(runs.pgDurable)} commits, ` +
        `Baton PG ${last(runs.batonPg)} (ledger off ${last(runs.batonPgOff)}), ${peers}; ` +
        `SQLite durable ${last(runs.sqliteDurable)} commits, Baton SQLite ${last(runs.batonSqlite)} ` +
        `(ledger off ${last(runs.batonSqliteOff)})`,
    );
  }
  return runs;
}

/** Per repetition, the fastest of the peer configurations named (jobs per second). */
export function bestOfPeers(runs: ThroughputRuns, names: readonly string[]): number[] {
  const reps = Math.max(0, ...names.map((name) => runs.peers[name]?.length ?? 0));
  return Array.from({ length: reps }, (_, index) =>
    Math.max(...names.map((name) => runs.peers[name]?.[index] ?? Number.NaN)),
  );
}

/** The per-repetition ratios a[i] / b[i]. */
export const ratiosOfRuns = (numerators: readonly number[], denominators: readonly number[]): number[] =>
  numerators.map((value, index) => value / (denominators[index] ?? Number.NaN));
/** The median of per-repetition ratios a[i] / b[i]. */
export const ratioOfRuns = (numerators: readonly number[], denominators: readonly number[]): number =>
  median(ratiosOfRuns(numerators, denominators));
