/**
 * An agent's trust rests on its claim's heartbeat alone (claim-watch.ts, issue 14, item 5): a real
 * agent (`sleep 30` under the shim) runs on a fake process clock against a real SQLite store whose
 * read of the job row is held back, as a busy pool or a silent connection would. The beats go on
 * and keep the agent trusted long past the trust window; the read, when it answers, still names
 * the kill.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { FakeClock } from '../../test/support/fake-clock.js';
import { daemonFixture, Hold, type DaemonFixture } from '../../test/support/daemon-fixture.js';
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import type { KillReason } from '../core/run-verdict.js';
import { openContainment, type Containment } from '../os/containment.js';
import type { Store } from '../store/store.js';
import type { Clock } from '../core/time.js';
import { systemClock } from './clock.js';
import { AgentRun } from './agent-run.js';

const SHIM = fileURLToPath(new URL('../os/agent-shim.js', import.meta.url));
const HEARTBEAT = 1_000;
const STALE = 5_000;
const TRUST = 3_000; // the runner's: STALE - 2 * HEARTBEAT (core/heartbeat-windows.ts)
const STEP = 250; // the watchdog looks, and the run samples, every 250 ms

/** The run under test, with the kills it was asked for (the watchdog's and the watch's alike). */
class WatchedRun extends AgentRun {
  readonly kills: KillReason[] = [];
  private said: () => void = () => undefined;
  readonly killed = new Promise<void>((resolve) => (this.said = resolve));

  override kill(reason: KillReason, why?: string): void {
    this.kills.push(reason);
    this.said();
    super.kill(reason, why);
  }
}

interface Setup<C extends Clock = FakeClock> {
  readonly f: DaemonFixture;
  readonly clock: C;
  readonly run: WatchedRun;
  readonly running: Promise<void>;
  readonly containment: Containment;
  /** The answers of reads of the job's row, held until the test says. */
  readonly reads: Hold;
  readonly counts: { claimBeats: number; reads: number };
  /** What claim beats do from now on: go to the database, never answer, or fail. */
  readonly claimBeats: { fault: 'none' | 'hang' | 'fail'; readonly hung: (() => void)[] };
  /** Every heartbeat sent so far has answered, and the run has taken the answer in. */
  answered(): Promise<void>;
  readonly lines: string[];
}

interface Timing<C extends Clock> {
  readonly clock: C;
  readonly heartbeatMs: number;
  readonly trustMs: number;
  readonly staleMs: number;
  /**
   * Called as a claim beat is sent, once the database took it; with it, the beat's answer reaches
   * the run through real I/O (a file system call), as a PostgreSQL answer does, not at once.
   */
  readonly onClaimBeat?: () => void;
}

const FAKE: Timing<FakeClock> = {
  clock: new FakeClock(),
  heartbeatMs: HEARTBEAT,
  trustMs: TRUST,
  staleMs: STALE,
};

/** A runner's host with job `k` (`sleep 30`) placed on it, run by an AgentRun (on the fake clock). */
async function setup(): Promise<Setup>;
async function setup<C extends Clock>(timing: Timing<C>): Promise<Setup<C>>;
async function setup(timing: Timing<Clock> = { ...FAKE, clock: new FakeClock() }): Promise<Setup<Clock>> {
  const f = await daemonFixture();
  const clock = timing.clock;
  const reads = new Hold();
  const runner = await f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1, ttlMs: 60_000 });
  await f.store.hosts.register({
    name: 'h1',
    session: runner.id,
    enabled: true,
    ramTotalMb: 8_000,
    ramReservedMb: 0,
    ramFreeMb: 8_000,
    slotsMax: 4,
  });
  const lease = await f.store.leases.acquire({ name: 'dispatcher', holder: 'leader', ttlMs: 60_000 });
  assert.ok(lease.ok);
  const term = { lease: 'dispatcher', holder: 'leader', term: lease.lease.term };
  const { job } = await f.store.jobs.enqueue({ key: 'k', command: 'sleep 30' });
  const placed = await f.store.dispatch.place({ id: job.id, host: 'h1', term });
  assert.ok(placed.ok);
  const cwd = mkdtempSync(join(tmpdir(), 'baton-trust-'));
  const counts = { claimBeats: 0, reads: 0 };
  const claimBeats: Setup['claimBeats'] = { fault: 'none', hung: [] };
  const beats = new Set<Promise<unknown>>();
  // The real store; a read of the job's row waits for the hold before it goes to the database,
  // as a query queued behind a busy pool does.
  const store: Store = {
    ...f.store,
    sessions: {
      ...f.store.sessions,
      heartbeat: (p) => {
        if (p.claim !== undefined) counts.claimBeats++;
        if (p.claim !== undefined && claimBeats.fault === 'hang') {
          // Until the test ends, as a silent connection until the query timeout.
          return new Promise((_, reject) => claimBeats.hung.push(() => reject(new Error('timeout'))));
        }
        if (p.claim !== undefined && claimBeats.fault === 'fail') {
          return Promise.reject(new Error('Connection terminated unexpectedly'));
        }
        let beat = f.store.sessions.heartbeat(p);
        const onClaimBeat = p.claim === undefined ? undefined : timing.onClaimBeat;
        if (onClaimBeat !== undefined) {
          const io = stat(cwd); // under way at once, and done during a pause that follows
          beat = Promise.all([beat, io]).then(([answer]) => answer);
          onClaimBeat();
        }
        const settled: Promise<unknown> = beat.then(
          () => beats.delete(settled),
          () => beats.delete(settled),
        );
        beats.add(settled);
        return beat;
      },
    },
    jobs: {
      ...f.store.jobs,
      get: async (id) => {
        if (id === job.id) {
          counts.reads++;
          await reads.pass(null);
        }
        return f.store.jobs.get(id);
      },
    },
  };
  const containment = openContainment({ choice: 'process-group', shimPath: SHIM });
  const lines: string[] = [];
  const run = new WatchedRun(
    {
      store,
      clock,
      host: 'h1',
      runnerSession: runner.id,
      dbUrl: f.url,
      containment,
      agentEnv: [],
      logDir: cwd,
      defaultCommand: null,
      heartbeatIntervalMs: timing.heartbeatMs,
      sampleIntervalMs: STEP,
      trustMs: timing.trustMs,
      cwd,
      worktreeDir: cwd,
      policy: DEFAULT_RETRY_POLICY,
      stall: { stallAfterMs: 3_600_000, action: 'none' },
      log: (line) => lines.push(line),
      sessionTtlMs: timing.staleMs,
    },
    placed.job,
  );
  const answered = async (): Promise<void> => {
    while (beats.size > 0) await Promise.all([...beats]);
    await turn(); // the run's own continuations of those answers
  };
  const running = run.run();
  return { f, clock, run, running, containment, reads, counts, claimBeats, answered, lines };
}

/** The agent is up: its session's beat, the watchdog and the sampling loop all sleep. */
async function agentUp(s: Setup): Promise<void> {
  await s.clock.sleeping(3);
  const job = await s.f.store.jobs.get(s.run.job.id);
  assert.equal(job?.status, 'running');
}

/**
 * Moves the process clock (and the database clock with it) in the watchdog's steps, each time
 * until the run's three loops sleep again and every beat sent has answered; stops at a kill.
 */
async function pass(s: Setup, ms: number): Promise<void> {
  for (let moved = 0; moved < ms && s.run.kills.length === 0; moved += STEP) {
    await s.f.moveDb(STEP);
    s.clock.advance(STEP);
    await Promise.race([s.clock.sleeping(3), s.run.killed]);
    await s.answered();
  }
}

async function done(s: Setup<Clock>): Promise<void> {
  s.run.kill('shutdown');
  for (const fail of s.claimBeats.hung) fail();
  s.reads.open();
  await s.running;
  await s.containment.close();
  await s.f.store.close();
}

/** The agent was killed once, as cancelled, and the log said why and that its tree is gone. */
function assertKilledAsCancelled(s: Setup<Clock>): void {
  assert.deepEqual(s.run.kills, ['cancelled']);
  const id = s.run.job.id;
  assert.ok(
    s.lines.includes(`job ${id} k: killing its agent (cancelled: its job was cancelled)`),
    s.lines.join('\n'),
  );
  assert.ok(s.lines.includes(`job ${id} k: cancelled, process tree killed`), s.lines.join('\n'));
}

test('a job read that hangs stops no heartbeat, and the agent is not fenced while they get through', async () => {
  const s = await setup();
  try {
    await agentUp(s);
    s.clock.advance(STEP); // the first beat goes out; its answer starts the read, which hangs
    await s.reads.holding();
    await s.clock.sleeping(3);
    await pass(s, 4 * TRUST);
    assert.deepEqual(s.run.kills, [], 'not killed, fenced or otherwise');
    const job = await s.f.store.jobs.get(s.run.job.id);
    assert.equal(job?.status, 'running');
    assert.ok(job.pid !== null);
    process.kill(job.pid, 0); // the agent is alive (throws ESRCH if not)
    assert.ok(s.counts.claimBeats >= (4 * TRUST) / HEARTBEAT, `${s.counts.claimBeats} claim beats`);
    assert.equal(s.counts.reads, 1, 'the read in flight is not started again');
  } finally {
    await done(s);
  }
});

test('a held job read that answers with the job cancelled kills the agent as cancelled', async () => {
  const s = await setup();
  try {
    await agentUp(s);
    s.clock.advance(STEP);
    await s.reads.holding();
    await s.clock.sleeping(3);
    await pass(s, 4 * TRUST);
    await s.f.store.jobs.cancel({ id: s.run.job.id, reason: 'cancelled by the test' });
    s.reads.open(); // the read goes to the database now, and finds the job cancelled
    await s.run.killed;
    await s.running;
    assertKilledAsCancelled(s);
    assert.equal((await s.f.store.jobs.get(s.run.job.id))?.status, 'cancelled');
    assert.equal(await s.f.store.claims.current('k'), null);
  } finally {
    await done(s);
  }
});

test('closing the task of a running job (which ends its claim) kills the agent as cancelled, not fenced', async () => {
  const s = await setup();
  try {
    await agentUp(s);
    s.reads.open();
    await s.f.store.lifecycle.transition({ key: 'k', action: 'close', by: { name: 'alice@box' } });
    await pass(s, 2 * TRUST);
    await s.run.killed;
    await s.running;
    assertKilledAsCancelled(s);
  } finally {
    await done(s);
  }
});

test('a refused claim heartbeat kills the agent as fenced, and the log says why at once', async () => {
  const s = await setup();
  try {
    await agentUp(s);
    s.reads.open();
    const job = await s.f.store.jobs.get(s.run.job.id);
    assert.ok(job?.agentSession != null);
    await s.f.store.sessions.end(job.agentSession); // as someone else ending the agent's session does
    await pass(s, 2 * TRUST);
    assert.deepEqual(s.run.kills, ['fenced']);
    const line = `job ${job.id} k: killing its agent (fenced: its claim heartbeat was refused)`;
    assert.ok(s.lines.includes(line), s.lines.join('\n'));
  } finally {
    await done(s);
  }
});

for (const [fault, what, cause] of [
  ['hang', 'never answer', /\(a beat sent \d+\.\d s ago has not answered\)/],
  ['fail', 'fail', /\(the database failed: Connection terminated unexpectedly\)/],
] as const) {
  test(`claim beats that ${what} kill the agent as fenced after the trust window, saying which`, async () => {
    const s = await setup();
    try {
      await agentUp(s);
      s.reads.open();
      await pass(s, 2 * HEARTBEAT);
      assert.deepEqual(s.run.kills, [], 'trusted while its beats are taken');
      s.claimBeats.fault = fault;
      await pass(s, 2 * TRUST);
      assert.deepEqual(s.run.kills, ['fenced']);
      const prefix = `job ${s.run.job.id} k: killing its agent (fenced: no claim heartbeat answered for `;
      const line = s.lines.find((l) => l.startsWith(prefix));
      assert.ok(line !== undefined && cause.test(line), s.lines.join('\n'));
    } finally {
      await done(s);
    }
  });
}

test('after this process did not run for longer than the window, a beat answered meanwhile still counts', async () => {
  // Timers run before pending I/O: the watchdog woke first after the pause and, without reading
  // the answer already in, judged from the beat before (found by the 6 s fleet run, where the
  // leader's process stalled for about 3 s and its newest agent was killed as fenced).
  const heartbeatMs = 2_000;
  const trustMs = 5_000; // beats every 2-2.25 s; the pause below starts as one is taken
  const pauseMs = 4_000; // > trustMs - heartbeatMs: from the beat before, the window has passed
  let beatsSent = 0;
  let pauses = 1;
  const s = await setup({
    clock: systemClock,
    heartbeatMs,
    trustMs,
    staleMs: 60_000,
    onClaimBeat: () => {
      beatsSent += 1;
      if (beatsSent < 3 || pauses === 0) return;
      pauses -= 1;
      const until = Date.now() + pauseMs;
      while (Date.now() < until); // this process does not run: CPU starvation, a long sync call
    },
  });
  try {
    s.reads.open();
    while (pauses > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setTimeout(resolve, 2 * heartbeatMs));
    assert.deepEqual(s.run.kills, [], s.lines.join('\n'));
    assert.equal((await s.f.store.jobs.get(s.run.job.id))?.status, 'running');
  } finally {
    await done(s);
  }
});
