/**
 * The cost of the run time limit's check (docs/decisions/0037-run-time-limit.md) beside the stall
 * check it runs next to: each runner tick of a run with a limit asks progress.markTimedOut once,
 * as it asks progress.markStalled. N running jobs, each with a limit not yet reached and an agent
 * attached, are asked both in alternating rounds in one process, on both engines; the figure is the
 * ratio of the medians per call (a run without any limit asks nothing: no query is added).
 *
 *   npm run build && BATON_BENCH_PG_URL=postgres://postgres:postgres@127.0.0.1:5432/postgres \
 *     node dist/bench/time-limit.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { median, nowMs } from './stats.js';

const JOBS = 50;
const ROUNDS = 30;

type Guard = { id: number; session: number; epoch: number };

async function seed(store: Store): Promise<Guard[]> {
  const runner = await store.sessions.start({ kind: 'daemon', host: 'bench', pid: 1 });
  const guards: Guard[] = [];
  for (let index = 0; index < JOBS; index++) {
    await store.jobs.enqueue({ key: `t${index}`, timeLimitMs: 3_600_000 });
    const job = await store.jobs.claimNext({ session: runner.id, start: true });
    if (job === null) throw new Error('a job to claim');
    const agent = await store.sessions.start({ kind: 'agent', host: 'bench', pid: 2 + index });
    const guard = { id: job.id, session: runner.id, epoch: job.epoch };
    await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 2 + index });
    guards.push(guard);
  }
  return guards;
}

/** Medians (ms per call) of the rounds of each check, the rounds alternating. */
async function measure(store: Store): Promise<{ stall: number; limit: number }> {
  const guards = await seed(store);
  const stall: number[] = [];
  const limit: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let t0 = nowMs();
    for (const guard of guards) await store.progress.markStalled({ ...guard, stallAfterMs: 3_600_000 });
    stall.push((nowMs() - t0) / JOBS);
    t0 = nowMs();
    for (const guard of guards) await store.progress.markTimedOut({ ...guard, defaultLimitMs: null });
    limit.push((nowMs() - t0) / JOBS);
  }
  return { stall: median(stall), limit: median(limit) };
}

function line(engine: string, figures: { stall: number; limit: number }): string {
  const ratio = (figures.limit / figures.stall).toFixed(2);
  return `${engine.padEnd(10)} markStalled ${figures.stall.toFixed(3)} ms  markTimedOut ${figures.limit.toFixed(3)} ms  ratio ${ratio}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-limit-'));
  try {
    const store = await openStore(join(dir, 'bench.db'));
    console.log(line('sqlite', await measure(store)));
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const server = process.env['BATON_BENCH_PG_URL'];
  if (server === undefined) return;
  const name = `baton_bench_limit_${process.pid}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(server);
    url.pathname = `/${name}`;
    const store = await openStore(url.href);
    console.log(line('postgres', await measure(store)));
    await store.close();
  } finally {
    await admin.query(`DROP DATABASE ${name}`);
    await admin.end();
  }
}

await main();
