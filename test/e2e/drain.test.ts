/**
 * `baton up` drains on its first SIGTERM or SIGINT (docs/decisions/0034-graceful-drain.md): the
 * running agent finishes and its job ends done, nothing new is started on the host, and the
 * lease is resigned at once; a second signal, or `--drain` running out, stops it as before
 * (the agent killed, its job requeued with its attempt given back).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/store/store.js';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import {
  agentStarted,
  clusterFixture,
  STEADY,
  withCluster,
  type ClusterFixture,
  type UpProcess,
} from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

/**
 * These tests are about the drain, not about fencing: every `baton up` here keeps FAST's short
 * heartbeat and lease, but Baton's default stale threshold (10 s) instead of FAST's 2 s. FAST
 * leaves a trust window of 1 s (stale-after minus two 0.5 s beats, core/heartbeat-windows.ts);
 * on a loaded machine a heartbeat round trip took longer (1.0-1.4 s, "a heartbeat call did not
 * answer"), the runner fenced itself, killed its agent and rejoined, and the drain's tests failed
 * on what followed: no run left to drain, a job done at attempt 2 (docs/decisions/0042).
 * `c.up` with the STEADY stale threshold (cluster-support.ts); `extra` after it.
 */
const steadyUp = (c: ClusterFixture, host: string, ...extra: string[]): UpProcess =>
  c.up(host, ...STEADY, ...extra);

/** An agent that ends done once the test creates `go`, so a test decides when it ends. */
function gated(c: ClusterFixture): { command: string; go: () => void } {
  const go = join(c.dir, 'go');
  const command = `for i in $(seq 600); do test -e '${go}' && exit 0; sleep 0.1; done; exit 1`;
  return { command, go: () => writeFileSync(go, '') };
}

/** Agent `a` (gated) running on h1 under `--drain 30s`: the agent, its job and h1's `baton up`. */
async function runningOnH1(c: ClusterFixture) {
  const agent = gated(c);
  const { job } = await c.store.jobs.enqueue({ key: 'a', command: agent.command });
  const up = steadyUp(c, 'h1', '--drain', '30s');
  await waitUntil(async () => agentStarted(c.store, 'a'), 15_000, 'the agent to start');
  return { agent, job, up };
}

async function status(store: Store, id: number): Promise<[string | undefined, number | undefined]> {
  const job = await store.jobs.get(id);
  return [job?.status, job?.attempt];
}

async function hostOf(store: Store, name: string) {
  return (await store.hosts.list()).find((host) => host.name === name);
}

async function exitCode(up: UpProcess): Promise<number | null> {
  await up.exited();
  return up.child.exitCode;
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton up drains on SIGTERM`, { concurrency: true }, () => {
    test('the running agent finishes and its job ends done; nothing new starts there; exit 0', () =>
      withCluster(db, async (c) => {
        const { agent, job, up } = await runningOnH1(c);
        // A warm standby takes the lease: a dispatcher that would place on h1 were it not marked.
        const standby = steadyUp(c, 'h2', '--standby');
        await standby.waitRunning();
        up.signal('SIGTERM');
        await up.waitForLog(/draining: 1 run\(s\) to finish by .* \(--drain 30 s\); host h1 disabled/);
        await standby.waitForLog(/leading the dispatcher/);
        const draining = await hostOf(c.store, 'h1');
        assert.deepEqual(
          [draining?.enabled, draining?.draining],
          [false, true],
          'no dispatcher places on it',
        );
        const listed = await c.baton('hosts');
        assert.match(listed.stdout, /^h1\s+draining\s/m, listed.stdout + listed.stderr);
        // Queued while it drains, under a leader that places on any enabled host: never placed on h1
        // (its epoch would move with a placement, even one given back).
        const { job: later } = await c.store.jobs.enqueue({ key: 'b', command: 'exit 0' });
        // An operator's enable is refused while its baton up drains (the dashboard's Enable too).
        const enable = await c.baton('host', 'enable', 'h1');
        assert.equal(enable.code, 3, enable.stdout + enable.stderr);
        assert.match(
          enable.stderr,
          /^baton: host h1 is draining: its baton up is stopping — enable it after/,
        );
        assert.equal(enable.stderr.trim().split('\n').length, 1, enable.stderr);
        await new Promise((resolve) => setTimeout(resolve, 1500)); // three of its polls, and the leader's
        const waiting = await c.store.jobs.get(later.id);
        assert.deepEqual(
          [waiting?.status, waiting?.attempt, waiting?.epoch, waiting?.host],
          ['queued', 0, later.epoch, null],
          'never placed while draining',
        );
        assert.equal((await hostOf(c.store, 'h1'))?.enabled, false, 'the refused enable changed nothing');
        assert.equal(up.child.exitCode, null, 'it waits for its agent');
        agent.go();
        assert.equal(await exitCode(up), 0, up.log());
        assert.deepEqual(await status(c.store, job.id), ['done', 1], 'done, not requeued');
        assert.deepEqual(await status(c.store, later.id), ['queued', 0], 'never placed on the draining host');
        assert.match(
          up.log(),
          new RegExp(`draining: job ${job.id} a ended \\(done\\); 0 run\\(s\\) still running`),
        );
        assert.match(up.log(), /drained: every run ended/);
        assert.doesNotMatch(up.log(), /runner shut down/);
        assert.match((await c.baton('hosts')).stdout, /^h1\s+drained\s/m);
        // Disabled by the drain only: the next baton up on the host enables it, and runs the waiting job.
        const again = steadyUp(c, 'h1');
        await waitUntil(async () => (await status(c.store, later.id))[0] === 'done', 30_000, again.log());
        assert.deepEqual(
          [(await hostOf(c.store, 'h1'))?.enabled, (await hostOf(c.store, 'h1'))?.draining],
          [true, false],
        );
      }));

    test('a job placed on a draining host is given back, the host marked again, and runs elsewhere', () =>
      withCluster(db, async (c) => {
        const { agent, job, up } = await runningOnH1(c);
        const other = steadyUp(c, 'h2', '--standby');
        await other.waitRunning();
        up.signal('SIGTERM');
        await up.waitForLog(/draining: 1 run\(s\) to finish/);
        await other.waitForLog(/leading the dispatcher/);
        // Enabled behind the drain's back (a client older than the refusal, or a placement on
        // PostgreSQL that read the host enabled before the mark): the leader places b on h1.
        await c.store.hosts.setEnabled({ name: 'h1', enabled: true });
        const { job: later } = await c.store.jobs.enqueue({ key: 'b', command: 'exit 0' });
        await up.waitForLog(
          new RegExp(`draining: job ${later.id} b was placed here: given back to the queue`),
        );
        assert.match(up.log(), /draining: host h1 marked draining again: it had been enabled/);
        assert.deepEqual(
          [(await hostOf(c.store, 'h1'))?.enabled, (await hostOf(c.store, 'h1'))?.draining],
          [false, true],
        );
        assert.equal(await c.store.jobs.get(later.id).then((j) => j?.status), 'queued', 'not stuck on h1');
        assert.equal(up.child.exitCode, null, 'h1 still drains');
        const enable = await c.baton('host', 'enable', 'h2');
        assert.equal(enable.code, 0, enable.stderr);
        await waitUntil(async () => (await status(c.store, later.id))[0] === 'done', 30_000, other.log());
        const ran = await c.store.jobs.get(later.id);
        assert.deepEqual(
          [ran?.host, ran?.attempt],
          ['h2', 1],
          `its attempt given back on h1\n${up.log()}\n${other.log()}`,
        );
        agent.go();
        assert.equal(await exitCode(up), 0, up.log());
        assert.deepEqual(await status(c.store, job.id), ['done', 1]);
      }));

    test('a runner fenced while it drains says the fence killed its runs', () =>
      withCluster(db, async (c) => {
        const { up } = await runningOnH1(c);
        up.signal('SIGTERM');
        await up.waitForLog(/draining: 1 run\(s\) to finish/);
        const session = (await hostOf(c.store, 'h1'))?.session;
        assert.ok(session !== null && session !== undefined);
        await c.store.sessions.end(session); // its next heartbeat is refused: fenced
        assert.equal(await exitCode(up), 0, up.log());
        assert.match(
          up.log(),
          /drain ended by a fence: 1 run\(s\) killed, their jobs left to the leader's rescue/,
        );
        assert.doesNotMatch(up.log(), /drained: every run ended/);
      }));

    test('when --drain runs out, the agent is killed and its job requeued, its attempt given back', () =>
      withCluster(db, async (c) => {
        const { job } = await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
        const up = steadyUp(c, 'h1', '--drain', '1s');
        await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
        up.signal('SIGTERM');
        assert.equal(await exitCode(up), 0, up.log());
        assert.deepEqual(await status(c.store, job.id), ['queued', 0]);
        assert.match((await c.store.jobs.get(job.id))?.reason ?? '', /^requeued: runner shut down/);
        assert.match(
          up.log(),
          /drain cut short by --drain 1 s ran out: 1 run\(s\) killed, their jobs requeued/,
        );
      }));

    test('an idle baton up stopped by SIGTERM marks its host as a drain does, and the next one enables it', () =>
      withCluster(db, async (c) => {
        const up = steadyUp(c, 'h1');
        await up.waitRunning();
        up.signal('SIGTERM');
        assert.equal(await exitCode(up), 0, up.log());
        assert.match(
          up.log(),
          /host h1 disabled until baton up starts again here \(a planned stop, not a crash\)/,
        );
        const stopped = await hostOf(c.store, 'h1');
        assert.deepEqual([stopped?.enabled, stopped?.draining], [false, true]);
        // Drained, not down: the alerts give it the drain's grace (baton_host_not_serving has no series).
        assert.match((await c.baton('hosts')).stdout, /^h1\s+drained\s/m);
        const again = steadyUp(c, 'h1');
        await again.waitRunning();
        const back = await hostOf(c.store, 'h1');
        assert.deepEqual([back?.enabled, back?.draining], [true, false]);
      }));

    test('a second signal stops it at once, as JSON events with --json', () =>
      withCluster(db, async (c) => {
        const { job } = await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
        const up = steadyUp(c, 'h1', '--drain', '10m', '--json');
        await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
        up.signal('SIGTERM');
        await up.waitForLog(/"event":"drain:start"/);
        up.signal('SIGINT');
        assert.equal(await exitCode(up), 0, up.log());
        assert.deepEqual(await status(c.store, job.id), ['queued', 0]);
        const events = up
          .log()
          .split('\n')
          .filter((line) => line.includes('"event":"drain:'))
          .map((line) => JSON.parse(line) as Record<string, unknown>);
        assert.deepEqual(
          events.map((event) => [event['event'], event['runs'] ?? event['left'], event['cut']]),
          [
            ['drain:start', 1, undefined],
            ['drain:end', 1, 'signal'],
          ],
        );
        assert.match(String(events[1]?.['line']), /drain cut short by a second signal: 1 run\(s\) killed/);
      }));

    test('a leading host resigns the lease at once: another leads, and work queued meanwhile runs there', () =>
      withCluster(db, async (c) => {
        const agent = gated(c);
        const { job } = await c.store.jobs.enqueue({ key: 'a', command: agent.command });
        const first = steadyUp(c, 'h1', '--drain', '30s', '--lease-ttl', '60');
        await first.waitForLog(/leading the dispatcher, term 1/);
        await waitUntil(async () => agentStarted(c.store, 'a'), 15_000, 'the agent to start');
        const second = steadyUp(c, 'h2', '--lease-ttl', '60');
        await second.waitRunning();
        first.signal('SIGTERM');
        // Without the resignation it would wait out the 60 s TTL, long after the agent below has ended.
        await second
          .waitForLog(/leading the dispatcher, term 2, after session \d+, which stepped down/, 30_000)
          .catch((error: unknown) => assert.fail(`${String(error)}\n${first.log()}\n${second.log()}`));
        assert.equal(first.child.exitCode, null, 'the first still drains: it resigned before its run ended');
        const { job: later } = await c.store.jobs.enqueue({ key: 'b', command: 'exit 0' });
        await waitUntil(async () => (await status(c.store, later.id))[0] === 'done', 30_000, second.log());
        assert.equal((await c.store.jobs.get(later.id))?.host, 'h2');
        agent.go();
        assert.equal(await exitCode(first), 0, first.log());
        assert.deepEqual(await status(c.store, job.id), ['done', 1]);
      }));
  });
}

test('a --drain that is no duration, or past a day, is refused before anything starts (exit 2, one line)', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    for (const [value, said] of [
      ['soon', /^baton: --drain must be a duration such as 8h, 90m or 30s, got "soon" — write a number/],
      ['2d', /^baton: --drain must be from 0 s to 24 h, got "2d"/],
    ] as const) {
      const bad = await c.baton('up', '--host', 'h1', '--drain', value);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, said);
      assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
      assert.doesNotMatch(bad.stdout, /joined as session/);
    }
    assert.deepEqual(await c.store.hosts.list(), [], 'no host registered');
  } finally {
    await c.close();
  }
});
