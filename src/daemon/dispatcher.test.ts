/**
 * The dispatcher's passes on a fake process clock, against a real SQLite store. Leadership is the
 * narrow interface the dispatcher takes (a LeaderElector in `baton up`): here a term the test
 * holds on the real lease, and can drop, as a leader that loses its window would.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../test/support/fake-clock.js';
import { daemonFixture, type DaemonFixture } from '../../test/support/daemon-fixture.js';
import { WAITING_FOR_AGENT_COMMAND } from '../core/capacity.js';
import { DEFAULT_RETRY_POLICY } from '../core/retry.js';
import type { Job } from '../core/job.js';
import type { RescueReport } from '../store/dispatch-store.js';
import { Dispatcher, type Leadership } from './dispatcher.js';

const LEASE = 'dispatcher';
const RECOVERY_MS = 10_000;

class HeldTerm implements Leadership {
  readonly name = LEASE;
  term: number | null = null;
  leaderTerm(): number | null {
    return this.term;
  }
}

interface Setup {
  readonly f: DaemonFixture;
  readonly clock: FakeClock;
  readonly leader: HeldTerm;
  readonly dispatcher: Dispatcher;
  readonly placed: Job[];
  readonly fenced: number[];
  readonly rescued: RescueReport[];
}

async function setup(jobs: number, batchMax?: number): Promise<Setup> {
  const f = await daemonFixture();
  const clock = new FakeClock();
  const leader = new HeldTerm();
  const session = await f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1, ttlMs: 60_000 });
  await f.store.hosts.register({
    name: 'h1',
    session: session.id,
    enabled: true,
    ramTotalMb: 8_000,
    ramReservedMb: 0,
    ramFreeMb: 8_000,
    slotsMax: 10,
  });
  for (let i = 1; i <= jobs; i++) await f.store.jobs.enqueue({ key: `t${i}`, ramMb: 100 });
  const dispatcher = new Dispatcher({
    store: f.store,
    elector: leader,
    holder: 'me',
    clock,
    intervalMs: 1_000,
    staleAfterMs: 30_000,
    recoveryIntervalMs: RECOVERY_MS,
    policy: DEFAULT_RETRY_POLICY,
    batchMax,
  });
  const placed: Job[] = [];
  const fenced: number[] = [];
  const rescued: RescueReport[] = [];
  dispatcher.on('placed', (job) => placed.push(job));
  dispatcher.on('fenced', (term) => fenced.push(term));
  dispatcher.on('rescued', (report) => rescued.push(report));
  return { f, clock, leader, dispatcher, placed, fenced, rescued };
}

/** Takes the real lease for holder `me` and says so to the dispatcher. */
async function lead(s: Setup): Promise<void> {
  const r = await s.f.store.leases.acquire({ name: LEASE, holder: 'me', ttlMs: 5_000 });
  assert.ok(r.ok);
  s.leader.term = r.lease.term;
}

const statuses = async (s: Setup): Promise<string[]> =>
  (await s.f.store.jobs.list()).map((j) => `${j.key}:${j.status}`).sort();

test('places nothing while this process does not lead', async () => {
  const s = await setup(1);
  try {
    await s.dispatcher.tick();
    assert.deepEqual(await statuses(s), ['t1:queued']);
    assert.deepEqual(s.placed, []);
  } finally {
    await s.f.store.close();
  }
});

test('a leader places queued jobs on a host with room, under its term', async () => {
  const s = await setup(2);
  try {
    await lead(s);
    await s.dispatcher.tick();
    assert.deepEqual(await statuses(s), ['t1:claimed', 't2:claimed']);
    assert.deepEqual(
      s.placed.map((j) => j.host),
      ['h1', 'h1'],
    );
  } finally {
    await s.f.store.close();
  }
});

test('a pass that loses leadership before it writes places nothing', async () => {
  const s = await setup(2);
  try {
    await lead(s);
    // The term holds when the pass starts and is gone by the time it would write.
    const term = s.leader.term;
    let asked = 0;
    s.leader.leaderTerm = () => (asked++ === 0 ? term : null);
    await s.dispatcher.tick();
    assert.deepEqual(s.placed, []);
    assert.deepEqual(await statuses(s), ['t1:queued', 't2:queued']);
  } finally {
    await s.f.store.close();
  }
});

test('a leader whose term was taken over is refused by the store and reports fenced', async () => {
  const s = await setup(1);
  const other = await s.f.another();
  try {
    await lead(s);
    // This process was paused past its lease; another took the next term meanwhile.
    await s.f.moveDb(5_001);
    const taken = await other.leases.acquire({ name: LEASE, holder: 'other', ttlMs: 60_000 });
    assert.ok(taken.ok);
    await s.dispatcher.tick();
    assert.deepEqual(s.fenced, [1]);
    assert.deepEqual(s.placed, []);
    const [job] = await s.f.store.jobs.list();
    assert.equal(job?.status, 'queued');
  } finally {
    await other.close();
    await s.f.store.close();
  }
});

test('recovery runs at most once per recovery interval, on the process clock', async () => {
  const s = await setup(0);
  try {
    await lead(s);
    const silent = async (): Promise<number> =>
      (await s.f.store.sessions.start({ kind: 'agent', host: 'h2', pid: 2, ttlMs: 1_000 })).id;
    const first = await silent();
    await s.f.moveDb(31_000);
    await s.dispatcher.tick();
    assert.ok(
      s.rescued.some((r) => r.sessions.includes(first)),
      'the first pass rescues',
    );
    const second = await silent();
    await s.f.moveDb(31_000);
    s.clock.advance(RECOVERY_MS - 1);
    await s.dispatcher.tick();
    assert.ok(!s.rescued.some((r) => r.sessions.includes(second)), 'not again before the interval');
    s.clock.advance(1);
    await s.dispatcher.tick();
    assert.ok(
      s.rescued.some((r) => r.sessions.includes(second)),
      'again once the interval has passed',
    );
  } finally {
    await s.f.store.close();
  }
});

test('between passes it pauses its interval on the injected clock, and a wake ends the pause', async () => {
  const s = await setup(0);
  try {
    s.dispatcher.start();
    await s.clock.sleeping(1);
    assert.deepEqual(s.clock.asked, [1_000]);
    s.clock.advance(1_000);
    await s.clock.sleeping(1);
    assert.deepEqual(s.clock.asked, [1_000, 1_000]);
    s.dispatcher.wake();
    await s.clock.sleeping(1);
    assert.equal(s.clock.asked.length, 3, 'woken: a pass ran without the clock moving');
    assert.equal(s.clock.monotonicNowMs(), 1_000);
  } finally {
    await s.dispatcher.stop();
    await s.f.store.close();
  }
});

// A placement no longer wakes the process that made it (store/postgres/wakeups.ts), and this test
// pumps no wake-ups at all: the passes after a full batch come from the dispatcher itself.
test('a pass that filled its batch and placed work is followed by the next at once', async () => {
  const s = await setup(5, 2);
  try {
    await lead(s);
    s.dispatcher.start();
    await s.clock.sleeping(1);
    assert.equal(s.placed.length, 5, 'three passes (2, 2 and 1 jobs) before the first pause');
    assert.deepEqual(s.clock.asked, [1_000]);
    assert.equal(s.clock.monotonicNowMs(), 0);
  } finally {
    await s.dispatcher.stop();
    await s.f.store.close();
  }
});

test('a job the store refuses for want of an agent command on its host waits with the reason, unplaced', async () => {
  const s = await setup(0);
  try {
    await lead(s);
    const { job } = await s.f.store.jobs.enqueue({ key: 'bare' });
    // h1's runner re-registered without an agent command after this pass read the candidates and
    // the fleet (decision 0047): both reads are the ones from before, the store judges the new row.
    const { now, jobs } = await s.f.store.dispatch.candidates({ limit: 50 });
    const fleet = await s.f.store.hosts.fleet();
    const [old] = await s.f.store.sessions.list({ liveOnly: true });
    assert.ok(old !== undefined);
    await s.f.store.sessions.end(old.id);
    const session = await s.f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 2, ttlMs: 60_000 });
    const capacity = { ramTotalMb: 8_000, ramReservedMb: 0, ramFreeMb: 8_000, slotsMax: 10 };
    await s.f.store.hosts.register({ name: 'h1', session: session.id, ...capacity, agentCommand: false });
    const store = {
      ...s.f.store,
      dispatch: { ...s.f.store.dispatch, candidates: () => Promise.resolve({ now, jobs }) },
      hosts: { ...s.f.store.hosts, fleet: () => Promise.resolve(fleet) },
    };
    const stale = new Dispatcher({
      store,
      elector: s.leader,
      holder: 'me',
      clock: s.clock,
      intervalMs: 1_000,
      staleAfterMs: 30_000,
      recoveryIntervalMs: RECOVERY_MS,
      policy: DEFAULT_RETRY_POLICY,
    });
    const waiting: string[] = [];
    stale.on('waiting', (_job, reason) => waiting.push(reason));
    await stale.tick();
    assert.deepEqual(waiting, [WAITING_FOR_AGENT_COMMAND]);
    const after = await s.f.store.jobs.get(job.id);
    assert.deepEqual(
      { status: after?.status, reason: after?.reason, attempt: after?.attempt },
      { status: 'queued', reason: WAITING_FOR_AGENT_COMMAND, attempt: 0 },
    );
  } finally {
    await s.f.store.close();
  }
});
