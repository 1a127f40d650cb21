/**
 * Agent start: from enqueue to the agent's shell running, under a real `baton up` (one process,
 * bin/baton.js, leading the dispatcher and running this host). Each sample enqueues one job
 * whose command is `date +%s%N > <dir>/<key>`: the shell writes the wall clock the moment it
 * runs, which the bench compares with its own wall clock read just before the enqueue call (one
 * machine, one clock). The path in between is the whole of Baton's: the enqueue's wake-up, the
 * dispatcher's placement, its hand-off to the runner of the same process, the run's start, claim
 * and token, the job's scope (a cgroup the shell enters; the Node shim only where the host has no
 * cgroup), the shell.
 * Samples run one at a time, each after the previous run ended (its job done and its agent's
 * session ended, the run's last write), so `baton up` is idle when a job arrives.
 *
 * Two figures, from one `baton up`. **Cold**: its jobs `WARMUP` + 1 to `WARMUP` + `COLD_SAMPLES`,
 * just after it started. On PostgreSQL each pooled connection then still plans every statement
 * for its values (five custom plans, then the generic one; the bind of the placement took
 * 1.4-6.4 ms, then 0.05-0.1 once generic). **Steady** (`p50`, the figure the target reads): after
 * `STEADY_AFTER` jobs, when every connection the start path uses runs its cached plans, as in a
 * `baton up` that has been running for a while (docs/decisions/0019, "Agent start: a daemon
 * that has just started, and one that has run").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { median, nowMs, sleep } from './stats.js';

const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));
/** Jobs not timed at all at the start: the first ones also load code no later job does. */
export const WARMUP = 2;
/** Jobs timed just after the start (the cold figure). */
export const COLD_SAMPLES = 10;
/** Jobs `baton up` has run before the steady samples: enough for its connections' plans to settle. */
export const STEADY_AFTER = 30;
const HOST = 'bench-agent-start';

export interface AgentStartResult {
  /** p50 of the steady samples, ms. */
  readonly p50: number;
  readonly samples: readonly number[];
  /** p50 of the jobs just after `baton up` started, ms. */
  readonly coldP50: number;
  readonly coldSamples: readonly number[];
}

async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const deadline = nowMs() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (nowMs() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** `baton up` on `db`, leading and serving its host, its output in `dir`. */
async function up(db: string, dir: string, store: Store): Promise<ChildProcess> {
  const fd = openSync(join(dir, 'up.log'), 'a');
  const child = spawn(process.execPath, [BIN, '--db', db, 'up', '--host', HOST], {
    cwd: dir,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  await until('baton up to lead and serve its host', async () => {
    const lease = await store.leases.get('dispatcher');
    const host = (await store.hosts.list()).find((listed) => listed.name === HOST);
    return lease?.holder !== null && lease !== null && host?.session !== null && host !== undefined
      ? 1
      : null;
  });
  return child;
}

/** One sample: ms from just before the enqueue to the agent's shell writing its clock. */
async function sample(store: Store, dir: string, index: number): Promise<number> {
  const key = `agent-start-${index}`;
  const mark = join(dir, key);
  const sentAt = Date.now();
  const { job } = await store.jobs.enqueue({
    key,
    command: `date +%s%N > ${mark}.tmp && mv ${mark}.tmp ${mark}`,
  });
  const startedNs = await until(`the agent of ${key}`, () =>
    Promise.resolve(existsSync(mark) ? BigInt(readFileSync(mark, 'utf8').trim()) : null),
  );
  const done = await until(`job ${job.id} to finish`, async () => {
    const row = await store.jobs.get(job.id);
    return row?.status === 'done' ? row : null;
  });
  // The run goes on after its job is done (claim released, lock and token gone, the agent's
  // session ended, in that order): the next sample waits for its end, so that `baton up` is idle.
  const agent = done.agentSession;
  if (agent !== null)
    await until(`the agent session of job ${job.id} to end`, async () =>
      (await store.sessions.get(agent))?.state === 'ended' ? 1 : null,
    );
  return Number(startedNs / 1000n) / 1000 - sentAt;
}

/**
 * On the database `db` (a fresh one: SQLite path or URL): COLD_SAMPLES starts just after `baton
 * up` started (after WARMUP), then `samples` starts once it has run STEADY_AFTER jobs.
 */
export async function measureAgentStart(db: string, samples: number): Promise<AgentStartResult> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-agent-'));
  const store = await openStore(db);
  let child: ChildProcess | null = null;
  try {
    child = await up(db, dir, store);
    const cold: number[] = [];
    const steady: number[] = [];
    for (let index = 0; index < STEADY_AFTER + samples; index++) {
      const ms = await sample(store, dir, index);
      if (index >= WARMUP && index < WARMUP + COLD_SAMPLES) cold.push(ms);
      if (index >= STEADY_AFTER) steady.push(ms);
    }
    return { p50: median(steady), samples: steady, coldP50: median(cold), coldSamples: cold };
  } finally {
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const running = child;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
