/**
 * The runner's trust window on a fake process clock, against a real SQLite store: heartbeats
 * that get through keep it trusted, a refused one fences it at once, and one that hangs fences it
 * from its own watchdog once the window has passed, whatever the hanging call does; a good answer
 * that comes back late vouches only for the time its beat was sent. A job without a command
 * placed on this runner, which has no agent command, goes back to the queue unstarted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { FakeClock } from '../../test/support/fake-clock.js';
import { daemonFixture, Hold, type DaemonFixture } from '../../test/support/daemon-fixture.js';
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import { openContainment } from '../os/containment.js';
import type { Store } from '../store/store.js';
import { DEFAULT_STALL_POLICY } from './run-progress.js';
import { Runner } from './runner.js';

const HEARTBEAT = 1_000;
const STALE = 5_000; // trusted for max(HEARTBEAT, STALE - 2 * HEARTBEAT) = 3,000 ms without a beat
const WATCH = 250; // the watchdog looks every min(250, HEARTBEAT)

interface Setup {
  readonly f: DaemonFixture;
  readonly clock: FakeClock;
  readonly runner: Runner;
  readonly session: number;
  readonly beats: Hold;
  readonly failures: unknown[];
  fenced: boolean;
  readonly fencedNow: Promise<void>;
}

async function setup(): Promise<Setup> {
  const f = await daemonFixture();
  const clock = new FakeClock();
  const beats = new Hold(false);
  const session = await f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1, ttlMs: STALE });
  await f.store.hosts.register({
    name: 'h1',
    session: session.id,
    enabled: true,
    ramTotalMb: 8_000,
    ramReservedMb: 0,
    ramFreeMb: 8_000,
    slotsMax: 4,
  });
  // The real store; the answers of host heartbeats are held back when the test says so.
  const store: Store = {
    ...f.store,
    hosts: { ...f.store.hosts, heartbeat: async (p) => beats.pass(await f.store.hosts.heartbeat(p)) },
  };
  const runner = new Runner({
    store,
    clock,
    host: 'h1',
    session: session.id,
    dbUrl: f.url,
    containment: openContainment({ choice: 'process-group', shimPath: '' }),
    agentEnv: [],
    logDir: tmpdir(),
    defaultCommand: null,
    heartbeatIntervalMs: HEARTBEAT,
    sampleIntervalMs: 250,
    pollIntervalMs: 1_000,
    staleAfterMs: STALE,
    cwd: tmpdir(),
    worktreeDir: tmpdir(),
    policy: DEFAULT_RETRY_POLICY,
    stall: DEFAULT_STALL_POLICY,
    log: () => undefined,
  });
  const failures: unknown[] = [];
  runner.on('failed', (error) => failures.push(error));
  let said: () => void = () => undefined;
  const fencedNow = new Promise<void>((resolve) => (said = resolve));
  const s: Setup = { f, clock, runner, session: session.id, beats, failures, fenced: false, fencedNow };
  runner.on('fenced', () => {
    s.fenced = true;
    said();
  });
  return s;
}

/** Moves the process clock (and the database clock with it) by steps of the watchdog's period. */
async function pass(s: Setup, ms: number, loopsAsleep: number): Promise<void> {
  for (let moved = 0; moved < ms && !s.fenced; moved += WATCH) {
    await s.f.moveDb(WATCH);
    s.clock.advance(WATCH);
    await Promise.race([s.clock.sleeping(loopsAsleep), s.fencedNow]);
  }
}

async function done(s: Setup): Promise<void> {
  s.beats.open();
  await s.runner.stop(true);
  await s.f.store.close();
  assert.deepEqual(s.failures, []);
}

test('heartbeats that get through keep the runner trusted as time passes', async () => {
  const s = await setup();
  try {
    s.runner.start();
    await s.clock.sleeping(4); // heartbeat, poll, watchdog and output-stream loops
    await pass(s, 4 * STALE, 4);
    assert.equal(s.fenced, false);
  } finally {
    await done(s);
  }
});

test('a refused heartbeat fences the runner at once', async () => {
  const s = await setup();
  try {
    s.runner.start();
    await s.clock.sleeping(4);
    await s.f.store.sessions.end(s.session); // declared gone, as recovery does to a stale session
    s.clock.advance(HEARTBEAT);
    await s.fencedNow;
    assert.equal(s.clock.monotonicNowMs(), HEARTBEAT, 'fenced on the first refused beat');
  } finally {
    await done(s);
  }
});

test('a heartbeat that hangs fences the runner from its watchdog once the trust window passes', async () => {
  const s = await setup();
  try {
    s.runner.start();
    await s.clock.sleeping(4); // the first beat got through at 0
    s.beats.close();
    s.clock.advance(HEARTBEAT); // the second beat is sent at 1,000 and its answer never comes
    await s.beats.holding();
    await s.clock.sleeping(3);
    await pass(s, 2_000, 3); // 3,000 ms since the last good beat: still within the window
    assert.equal(s.fenced, false, 'trusted for 3,000 ms after the last good beat');
    await pass(s, WATCH, 3);
    assert.equal(s.fenced, true, 'fenced by the watchdog at 3,250 with the beat still hanging');
    assert.equal(s.clock.monotonicNowMs(), 3_250);
  } finally {
    await done(s);
  }
});

test('a late answer vouches for the time its beat was sent, not the time it came back', async () => {
  const s = await setup();
  try {
    s.runner.start();
    await s.clock.sleeping(4); // the first beat got through at 0
    s.beats.close();
    s.clock.advance(HEARTBEAT); // the second beat is sent at 1,000; the database takes it, its answer waits
    await s.beats.holding();
    await s.clock.sleeping(3);
    await pass(s, 1_500, 3);
    // The good answer comes back at 2,500, as it would to a process that was paused meanwhile.
    s.beats.release();
    await s.clock.sleeping(4);
    await pass(s, 750, 4); // 3,250
    await s.f.moveDb(WATCH);
    s.clock.advance(WATCH); // 3,500: the third beat is sent and hangs
    await s.beats.holding();
    await s.clock.sleeping(3);
    await pass(s, 500, 3); // 4,000: 3,000 ms after the second beat was sent
    assert.equal(s.fenced, false, 'trusted for 3,000 ms after the send time of the last good beat');
    await pass(s, WATCH, 3);
    assert.equal(s.fenced, true, 'fenced at 4,250, not 3,000 ms after the late answer arrived (5,750)');
    assert.equal(s.clock.monotonicNowMs(), 4_250);
  } finally {
    await done(s);
  }
});

test("placeAndRun places and begins here only what it may: not another host's job, nor a github: task's", async () => {
  const s = await setup();
  try {
    const lease = await s.f.store.leases.acquire({ name: 'dispatcher', holder: 'me', ttlMs: 60_000 });
    assert.ok(lease.ok);
    const term = { lease: 'dispatcher', holder: 'me', term: lease.lease.term };
    const { job: plain } = await s.f.store.jobs.enqueue({ key: 'k', command: 'true' });
    const { job: github } = await s.f.store.jobs.enqueue({ key: 'github:acme/api#1', command: 'true' });
    const { job: bare } = await s.f.store.jobs.enqueue({ key: 'bare' });
    assert.equal(s.runner.placeAndRun(plain, 'h2', term), null, "another host's job");
    assert.equal(s.runner.placeAndRun(github, 'h1', term), null, "a github: task's job");
    assert.equal(s.runner.placeAndRun(bare, 'h1', term), null, 'a job without a command, here without one');
    const placed = await s.runner.placeAndRun(plain, 'h1', term);
    assert.deepEqual(
      [placed?.status, placed?.session, placed?.epoch],
      ['running', s.session, plain.epoch + 1],
    );
    assert.equal((await s.f.store.jobs.get(github.id))?.status, 'queued', 'left to placeMany');
    assert.equal((await s.f.store.jobs.get(bare.id))?.status, 'queued', 'left to placeMany');
  } finally {
    await done(s);
  }
});

test('a job without a command placed on a runner without an agent command goes back, attempt unspent', async () => {
  const s = await setup();
  try {
    // h1's register did not say (an older runner's row): placement takes it as able.
    const lease = await s.f.store.leases.acquire({ name: 'dispatcher', holder: 'me', ttlMs: 60_000 });
    assert.ok(lease.ok);
    const term = { lease: 'dispatcher', holder: 'me', term: lease.lease.term };
    const { job } = await s.f.store.jobs.enqueue({ key: 'bare' });
    const placed = await s.f.store.dispatch.place({ id: job.id, host: 'h1', term });
    assert.ok(placed.ok);
    assert.equal(placed.job.attempt, 1);
    s.runner.take(placed.job);
    await s.runner.idle();
    const back = await s.f.store.jobs.get(job.id);
    assert.deepEqual(
      { status: back?.status, attempt: back?.attempt, session: back?.session, startedAt: back?.startedAt },
      { status: 'queued', attempt: 0, session: null, startedAt: null },
    );
    assert.match(
      back?.reason ?? '',
      /^requeued: no agent command on h1: start baton up with --agent-command/,
    );
    const types = (await s.f.store.audit.list({ jobId: job.id })).map((entry) => entry.type);
    assert.deepEqual(types, ['job:enqueued', 'job:placed', 'job:requeued'], 'never started');
    assert.equal((await s.f.store.tasks.get('bare'))?.holder, null, 'its task never claimed');
  } finally {
    await done(s);
  }
});
