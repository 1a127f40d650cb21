/**
 * Scale: the cost of one claim with 1,000 items queued against 1,000,000. Both queues are filled
 * by a bulk INSERT … SELECT (seed.ts) and stay open side by side; one worker per queue claims in
 * alternation (small, large, small, …) so that the noise of the machine, mostly the fsync of
 * each commit, falls on both alike. Each claimNext is timed; a repetition's figure is its median
 * claim over `claims` claims per queue; the measure is the median over repetitions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostname, tmpdir } from 'node:os';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { dropDatabase, freshDatabase } from './pg-server.js';
import { seedBatonPg, seedBatonSqlite } from './seed.js';
import { median, nowMs, progress, type Repeated } from './stats.js';

const WARMUP_CLAIMS = 10;

export interface ScaleResult {
  readonly small: Repeated;
  readonly large: Repeated;
  /** Seconds to fill the large queue (setup, for the report). */
  readonly seedSeconds: number;
}

async function claimer(url: string): Promise<{ claim: () => Promise<number>; store: Store }> {
  const store = await openStore(url);
  const session = await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
  const claim = async (): Promise<number> => {
    const t0 = nowMs();
    const job = await store.jobs.claimNext({ session: session.id });
    const ms = nowMs() - t0;
    if (job === null) throw new Error('bench: the scale queue ran dry');
    return ms;
  };
  return { claim, store };
}

async function alternate(smallUrl: string, largeUrl: string, claims: number, reps: number) {
  const small = await claimer(smallUrl);
  const large = await claimer(largeUrl);
  try {
    for (let index = 0; index < WARMUP_CLAIMS; index++) {
      await small.claim();
      await large.claim();
    }
    const runs = { small: [] as number[], large: [] as number[] };
    for (let rep = 0; rep < reps; rep++) {
      const smallMs: number[] = [];
      const largeMs: number[] = [];
      for (let index = 0; index < claims; index++) {
        smallMs.push(await small.claim());
        largeMs.push(await large.claim());
      }
      runs.small.push(median(smallMs));
      runs.large.push(median(largeMs));
    }
    return {
      small: { median: median(runs.small), runs: runs.small },
      large: { median: median(runs.large), runs: runs.large },
    };
  } finally {
    await small.store.close();
    await large.store.close();
  }
}

async function timedSeed(label: string, seed: () => Promise<void>): Promise<number> {
  const t0 = nowMs();
  await seed();
  const seconds = (nowMs() - t0) / 1000;
  progress(`scale: ${label} seeded in ${seconds.toFixed(1)} s`);
  return seconds;
}

/** PostgreSQL: each queue in a fresh database on the bench server. */
export async function scalePg(
  serverUrl: string,
  small: number,
  large: number,
  claims: number,
  reps: number,
): Promise<ScaleResult> {
  const smallUrl = await freshDatabase(serverUrl, 'scalesmall');
  const largeUrl = await freshDatabase(serverUrl, 'scalelarge');
  try {
    await seedBatonPg(smallUrl, small);
    const seedSeconds = await timedSeed(`${large} queued on PostgreSQL`, () => seedBatonPg(largeUrl, large));
    return { ...(await alternate(smallUrl, largeUrl, claims, reps)), seedSeconds };
  } finally {
    await dropDatabase(serverUrl, smallUrl);
    await dropDatabase(serverUrl, largeUrl);
  }
}

/** SQLite: each queue in a fresh file. */
export async function scaleSqlite(
  small: number,
  large: number,
  claims: number,
  reps: number,
): Promise<ScaleResult> {
  const smallPath = join(mkdtempSync(join(tmpdir(), 'baton-bench-scale-')), 'baton.db');
  const largePath = join(mkdtempSync(join(tmpdir(), 'baton-bench-scale-')), 'baton.db');
  try {
    await seedBatonSqlite(smallPath, small);
    const seedSeconds = await timedSeed(`${large} queued on SQLite`, () => seedBatonSqlite(largePath, large));
    return { ...(await alternate(smallPath, largePath, claims, reps)), seedSeconds };
  } finally {
    rmSync(dirname(smallPath), { recursive: true, force: true });
    rmSync(dirname(largePath), { recursive: true, force: true });
  }
}
