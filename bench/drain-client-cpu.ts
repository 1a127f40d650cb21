/**
 * The CPU per job of Baton's PostgreSQL batch drain, client and server apart (issue 22; decision
 * 0017, "Session 21"). jobs/s moves with the machine's load; CPU per job far less:
 *   node dist/bench/drain-client-cpu.js [jobs, default 20000] [runs, default 3] [--profile FILE]
 * Each run seeds a fresh database (seedBatonPg) and drains it as throughput.ts drainSeededPg does
 * (one store, PG_BATCH_LOOPS loops of drainLoop, batches of DRAIN_BATCH), and reads over the drain
 * only: the client's CPU (process.cpuUsage) and that of the database's backends (/proc/<pid>/stat,
 * every backend of the database but the reader's own; one that connected during the drain counts
 * from zero). A first drain of as many jobs, not counted, warms the process up (its first drains
 * spent up to twice the CPU per job of the later ones). `--profile FILE` adds one more run, not
 * counted in the medians (the profiler costs CPU), that records the V8 profile of its drain (FILE,
 * a .cpuprofile) and prints its top functions and groups by self time to stderr. The server must
 * run on this machine:
 * BATON_BENCH_PG_URL (default postgres://postgres:postgres@127.0.0.1:5432/postgres).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Session, type Profiler } from 'node:inspector/promises';
import type pg from 'pg';
import { openStore } from '../src/store/open.js';
import { DRAIN_BATCH, drainLoop } from './drain-loop.js';
import { dropDatabase, freshDatabase, withClient } from './pg-server.js';
import { seedBatonPg } from './seed.js';
import { median, nowMs } from './stats.js';
import { PG_BATCH_LOOPS } from './throughput.js';

/** /proc/<pid>/stat counts CPU in clock ticks of 10 ms (USER_HZ = 100 on Linux). */
const MS_PER_TICK = 10;
/** This process's main thread, in /proc: the rest of its CPU is V8's helpers (GC, compilers) and libuv's. */
const MAIN_THREAD = `self/task/${process.pid}`;

/** User and system CPU of a process (or `task/<tid>` of this one) so far, ms; 0 when it has gone. */
function cpuMs(pid: number | string): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return 0;
  }
}

/** CPU so far of every backend of the reader's database but its own, by pid. */
async function backendCpu(reader: pg.Client): Promise<Map<number, number>> {
  const { rows } = await reader.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  return new Map(rows.map((row) => [row.pid, cpuMs(row.pid)]));
}

/** The CPU the backends spent between two readings (a backend absent at the first counts from 0). */
function spent(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}

interface Run {
  readonly jobsPerSecond: number;
  readonly clientUsPerJob: number;
  /** Of clientUsPerJob: in the kernel (process.cpuUsage().system). */
  readonly clientSystemUsPerJob: number;
  /** Of clientUsPerJob: on the main thread (JavaScript, and pg's socket reads and writes). */
  readonly clientMainUsPerJob: number;
  readonly serverUsPerJob: number;
}

/** Starts the V8 profiler in this process; the answer stops it and writes the profile. */
async function startProfile(file: string): Promise<() => Promise<Profiler.Profile>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
    return profile;
  };
}

/** drainSeededPg's drain, its CPU read over the loops only. */
async function drain(url: string, jobs: number, reader: pg.Client, profile: string | null): Promise<Run> {
  const store = await openStore(url);
  try {
    const start = (): ReturnType<typeof store.sessions.start> =>
      store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    const sessions = await Promise.all(Array.from({ length: PG_BATCH_LOOPS }, start));
    const stop = profile === null ? null : await startProfile(profile);
    const server0 = await backendCpu(reader);
    const client0 = process.cpuUsage();
    const main0 = cpuMs(MAIN_THREAD);
    const wall0 = nowMs();
    const counts = await Promise.all(
      sessions.map((session) => drainLoop(store, session.id, () => undefined, DRAIN_BATCH)),
    );
    const wall = nowMs() - wall0;
    const client = process.cpuUsage(client0);
    const main = cpuMs(MAIN_THREAD) - main0;
    const server = spent(server0, await backendCpu(reader));
    if (stop !== null) printTop(await stop());
    const total = counts.reduce((sum, part) => sum + part, 0);
    if (total !== jobs) throw new Error(`bench: Baton drained ${total} of ${jobs}`);
    return {
      jobsPerSecond: Math.round(jobs / (wall / 1000)),
      clientUsPerJob: round1((client.user + client.system) / jobs),
      clientSystemUsPerJob: round1(client.system / jobs),
      clientMainUsPerJob: round1((main * 1000) / jobs),
      serverUsPerJob: round1((server * 1000) / jobs),
    };
  } finally {
    await store.close();
  }
}

const round1 = (value: number): number => Math.round(value * 10) / 10;

/** Where a frame's code lives: its package, Baton's own folder, node's internals, or V8's pseudo-frame. */
function groupOf(frame: Profiler.ProfileNode['callFrame']): string {
  if (frame.url === '') return frame.functionName;
  if (frame.url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/([^/]+)\//.exec(frame.url);
  if (pkg !== null) return pkg[1] ?? '?';
  return /\/dist\/(.*)\/[^/]+$/.exec(frame.url)?.[1] ?? frame.url;
}

const share = (count: number, all: number): string => `${((100 * count) / all).toFixed(1).padStart(5)}%`;

/** The profile's top functions and groups by self time, as shares of the busy samples (not idle). */
function printTop(profile: Profiler.Profile): void {
  const hits = new Map<number, number>();
  for (const sample of profile.samples ?? []) hits.set(sample, (hits.get(sample) ?? 0) + 1);
  const self = new Map<string, number>();
  const groups = new Map<string, number>();
  let all = 0;
  for (const node of profile.nodes) {
    const count = hits.get(node.id) ?? 0;
    const frame = node.callFrame;
    if (frame.functionName === '(idle)') continue;
    const file = frame.url.replace(/^.*\/(node_modules|dist)\//, '');
    const name = `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
    self.set(name, (self.get(name) ?? 0) + count);
    groups.set(groupOf(frame), (groups.get(groupOf(frame)) ?? 0) + count);
    all += count;
  }
  const top = (map: Map<string, number>, size: number): [string, number][] =>
    [...map].sort((left, right) => right[1] - left[1]).slice(0, size);
  process.stderr.write(`busy samples: ${all}\n`);
  for (const [name, count] of top(groups, 12)) process.stderr.write(`${share(count, all)}  [${name}]\n`);
  for (const [name, count] of top(self, 30)) process.stderr.write(`${share(count, all)}  ${name}\n`);
}

async function oneRun(server: string, jobs: number, profile: string | null): Promise<Run> {
  const url = await freshDatabase(server, 'client_cpu');
  try {
    await seedBatonPg(url, jobs);
    return await withClient(url, (reader) => drain(url, jobs, reader, profile));
  } finally {
    await dropDatabase(server, url);
  }
}

const args = process.argv.slice(2);
const at = args.indexOf('--profile');
const profile = at < 0 ? null : (args[at + 1] ?? 'drain.cpuprofile');
const [jobsArg, runsArg] = at < 0 ? args : args.slice(0, at);
const server = process.env['BATON_BENCH_PG_URL'] ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const runCount = Number(runsArg ?? 3);
const runs: Run[] = [];
const jobs = Number(jobsArg ?? 20_000);
await oneRun(server, jobs, null);
for (let run = 0; run < runCount; run++) runs.push(await oneRun(server, jobs, null));
const profiled = profile === null ? undefined : await oneRun(server, jobs, profile);
const pick = (field: keyof Run): number => median(runs.map((run) => run[field]));
process.stdout.write(
  `${JSON.stringify({
    runs,
    profiled,
    median: {
      jobsPerSecond: pick('jobsPerSecond'),
      clientUsPerJob: pick('clientUsPerJob'),
      clientSystemUsPerJob: pick('clientSystemUsPerJob'),
      clientMainUsPerJob: pick('clientMainUsPerJob'),
      serverUsPerJob: pick('serverUsPerJob'),
    },
  })}\n`,
);
