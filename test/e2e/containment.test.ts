/**
 * The escapes of issue 15, tried against real `baton up` processes under each containment this
 * host offers (cgroup2, cgroup1, process-group): a setsid memory hog, a setsid sleep that should
 * outlive a cancel or its runner's SIGKILL, and leftovers a restarted `baton up` must kill before
 * it runs anything. The engine does not matter here; SQLite keeps it quick.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTAINMENT_KINDS, type ContainmentKind } from '../../src/core/containment.js';
import { openContainment } from '../../src/os/containment.js';
import { cgroupPids } from '../../src/os/cgroup.js';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, isAlive, pauseOutsideWriteLock, type ClusterFixture } from './cluster-support.js';

/** Why this host cannot offer the kind, or null when it can (a probe makes and removes a cgroup). */
async function unavailable(kind: ContainmentKind): Promise<string | null> {
  try {
    await openContainment({ choice: kind, shimPath: '' }).close();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const HOG = 'import time\na = []\nwhile True:\n    a.append(b"x" * 10_000_000)\n    time.sleep(0.02)\n';

const db = sqliteDatabase();

async function withCluster(body: (c: ClusterFixture) => Promise<void>): Promise<void> {
  const c = await clusterFixture(db);
  try {
    await body(c);
  } finally {
    await c.close();
  }
}

const jobOf = async (c: ClusterFixture, key: string) => (await c.store.jobs.list({ key }))[0];

/** The pid an agent wrote to `file` in the run directory, once it has. */
async function pidFrom(c: ClusterFixture, file: string): Promise<number> {
  let pid = 0;
  await waitUntil(
    () => {
      try {
        pid = Number(readFileSync(join(c.dir, file), 'utf8').trim());
      } catch {
        return false;
      }
      return pid > 0 && isAlive(pid);
    },
    15_000,
    `${file} to name a live process`,
  );
  return pid;
}

const SETSID_SLEEP = '(setsid sleep 301 & echo $! > sleep.pid); sleep 300';

/** A cgroup runner's base cgroups, as its log names them (none for the process-group kind). */
function basesOf(up: { log(): string }): string[] {
  return /under (.+); reaper pid/.exec(up.log())?.[1]?.split(', ') ?? [];
}

/** The pids in the warm slots (os/warm-slot.ts) under `base`: waiting, or a job's that took one. */
function inSlots(base: string): number[] {
  return readdirSync(base)
    .filter((name) => /^slot-\d+$/.test(name))
    .flatMap((name) => cgroupPids(join(base, name)));
}

for (const kind of CONTAINMENT_KINDS) {
  const skip = (await unavailable(kind)) ?? false;
  describe(`containment ${kind}`, { skip, concurrency: 2 }, () => {
    test('a setsid memory hog is oom_killed at its budget, with nothing of it left', () =>
      withCluster(async (c) => {
        writeFileSync(join(c.dir, 'hog.py'), HOG);
        const command = '(setsid python3 hog.py & echo $! > hog.pid); sleep 60';
        // Enqueued once the runner's warm slot waits: the job adopts it, and its budget, written
        // after the slot's process entered, must hold as one written before.
        const up = c.up('a', '--containment', kind);
        await up.waitForLog(/containment: .*\n/);
        const bases = basesOf(up);
        assert.equal(bases.length > 0, kind !== 'process-group', up.log());
        await waitUntil(() => bases.every((base) => inSlots(base).length > 0), 5_000, 'a warm slot');
        await c.store.jobs.enqueue({ key: 'hog', command, ramMb: 50 });
        const hog = await pidFrom(c, 'hog.pid');
        if (bases.length > 0) assert.match(readFileSync(`/proc/${hog}/cgroup`, 'utf8'), /\/slot-\d+$/m);
        await waitUntil(async () => (await jobOf(c, 'hog'))?.status === 'oom_killed', 20_000, 'oom_killed');
        assert.match((await jobOf(c, 'hog'))?.reason ?? '', /50 MB budget/);
        await waitUntil(() => !isAlive(hog), 5_000, 'the hog to be dead');
      }));

    test('a setsid sleep is gone after the job is cancelled', () =>
      withCluster(async (c) => {
        await c.store.jobs.enqueue({ key: 'sleepy', command: SETSID_SLEEP });
        c.up('a', '--containment', kind);
        const sleeper = await pidFrom(c, 'sleep.pid');
        const job = await jobOf(c, 'sleepy');
        const r = await c.baton('cancel', String(job?.id));
        assert.equal(r.code, 0, r.stderr);
        await waitUntil(() => !isAlive(sleeper), 5_000, 'the setsid sleep to die with its job');
        assert.equal((await jobOf(c, 'sleepy'))?.status, 'cancelled');
      }));

    test("a setsid sleep is gone after its runner's SIGKILL", () =>
      withCluster(async (c) => {
        await c.store.jobs.enqueue({ key: 'sleepy', command: SETSID_SLEEP });
        const up = c.up('a', '--containment', kind);
        const sleeper = await pidFrom(c, 'sleep.pid');
        // A cgroup runner keeps a warm slot, a process waiting in cgroups made before any job
        // needs them: it must die with the runner too (as must the job's agent, if it took one).
        const bases = basesOf(up);
        assert.equal(bases.length > 0, kind !== 'process-group', up.log());
        await waitUntil(() => bases.every((base) => inSlots(base).length > 0), 5_000, 'a warm slot');
        const slotted = bases.flatMap(inSlots);
        up.signal('SIGKILL');
        await up.exited();
        await waitUntil(() => !isAlive(sleeper), 5_000, 'the setsid sleep to die with its runner');
        await waitUntil(
          () => slotted.every((pid) => !isAlive(pid)),
          5_000,
          "the warm slot's process to die too",
        );
        await waitUntil(
          () => bases.every((base) => !existsSync(base)),
          5_000,
          "the runner's cgroups removed",
        );
      }));

    test("a paused runner's agent is dead before its session could be rescued (the watchdog)", () =>
      withCluster(async (c) => {
        await c.store.jobs.enqueue({ key: 'paused', command: 'echo $$ > agent.pid; exec sleep 300' });
        // Heartbeat 0.5 s (FAST), stale-after 4 s: the watchdog's deadline, the trust window, is 3 s.
        const up = c.up('a', '--containment', kind, '--stale-after', '4');
        const agent = await pidFrom(c, 'agent.pid');
        await up.waitForLog(/running as pid/);
        // Timed from before the pause is made sure of (its probes of the write lock take a while on a
        // loaded host): the agent's death is then no later, from the pause, than it measures.
        const paused = performance.now();
        pauseOutsideWriteLock(db, c.url, up);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, paused + 1000 - performance.now())));
        assert.ok(isAlive(agent), 'the agent lives on inside the deadline');
        await waitUntil(
          () => !isAlive(agent),
          4000,
          'the agent to die before stale-after (4 s) from the pause',
        );
        const deadAfter = performance.now() - paused;
        assert.ok(deadAfter < 4000, `dead ${deadAfter.toFixed(0)} ms after the pause`);
        up.signal('SIGCONT');
        await up.waitForLog(/did not run for [\d.]+ s, past its agents' watchdog \(3\.0 s\)/);
        // Woken before any rescue (no other host leads here): it fences itself, so the run its
        // watchdog killed is left to the rescue and requeued, not failed as an agent's own exit.
        await up.waitForLog(
          /fenced off: this process did not run for [\d.]+ s \(stopped, or starved of CPU\), past/,
        );
        const id = (await jobOf(c, 'paused'))?.id;
        await waitUntil(
          async () => (await c.store.audit.list({ jobId: id })).some((row) => row.type === 'job:requeued'),
          15_000,
          `job ${id} requeued:\n${up.log()}`,
        );
        const ends = (await c.store.audit.list({ jobId: id })).filter((row) => row.type === 'job:finished');
        assert.deepEqual(ends, [], 'the paused run ended as a failure of its own');
        if (kind !== 'process-group') return;
        // The shim says why in the job's log.
        const log = await c.baton('job', 'log', String((await jobOf(c, 'paused'))?.id));
        assert.match(
          log.stdout,
          new RegExp(`agent killed: its runner \\(pid ${up.pid}\\) was silent for 3\\.\\d s`),
        );
      }));

    test('the baton up that takes the host over kills what its dead predecessor left, before anything runs', () =>
      withCluster(async (c) => {
        await c.store.jobs.enqueue({ key: 'sleepy', command: SETSID_SLEEP });
        const first = c.up('solo', '--containment', kind);
        const sleeper = await pidFrom(c, 'sleep.pid');
        // Kill what would clean up after the runner first (its reaper, or the agent's shim): the
        // predecessor then leaves a live process behind, as when the whole service is killed.
        const reaper = /reaper pid (\d+)/.exec(first.log())?.[1];
        const guardian = kind === 'process-group' ? (await jobOf(c, 'sleepy'))?.pid : Number(reaper);
        assert.ok(guardian !== undefined && guardian !== null && guardian > 0, first.log());
        process.kill(guardian, 'SIGKILL');
        first.signal('SIGKILL');
        await first.exited();
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.ok(isAlive(sleeper), 'nothing else killed the leftover');
        const second = c.up('solo', '--containment', kind);
        await second.waitForLog(/killed \d+ process\(es\) left by session \d+/);
        await waitUntil(() => !isAlive(sleeper), 5_000, 'the leftover to be dead');
        await second.waitRunning();
        const log = second.log();
        assert.ok(log.indexOf('left by session') < log.indexOf('joined as session'), log);
        const hosts = await c.baton('hosts');
        assert.match(hosts.stdout, new RegExp(`solo .* ${kind} `));
      }));
  });
}
