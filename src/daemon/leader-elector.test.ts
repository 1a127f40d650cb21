/**
 * The leader elector's state machine on a fake process clock, against a real SQLite store whose
 * database clock the test moves separately (in the spirit of River's elector_test.go).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { FakeClock, fixedRandom } from '../../test/support/fake-clock.js';
import { daemonFixture, Hold, type DaemonFixture } from '../../test/support/daemon-fixture.js';
import type { Store } from '../store/store.js';
import { LeaderElector } from './leader-elector.js';

const TTL = 3_000; // renews every 1,000 ms; trusts a term for TTL - 300 ms from a renewal's sending
const RETRY = 500;

interface Setup {
  readonly f: DaemonFixture;
  readonly clock: FakeClock;
  readonly elector: LeaderElector;
  readonly renewals: Hold;
  readonly lost: [number, string][];
}

async function setup(random = fixedRandom(0.5), renewalsHeld = false): Promise<Setup> {
  const f = await daemonFixture();
  const clock = new FakeClock();
  const renewals = new Hold(renewalsHeld);
  // The real store, with the answers of renewals held back when the test says so.
  const store: Store = {
    ...f.store,
    leases: { ...f.store.leases, renew: async (p) => renewals.pass(await f.store.leases.renew(p)) },
  };
  const elector = new LeaderElector({
    store,
    holder: 'me',
    ttlMs: TTL,
    retryIntervalMs: RETRY,
    clock,
    random,
  });
  const lost: [number, string][] = [];
  elector.on('lost', (term, why) => lost.push([term, why]));
  return { f, clock, elector, renewals, lost };
}

async function lead(s: Setup): Promise<number> {
  const gained = once(s.elector, 'gained');
  s.elector.start();
  const [term] = (await gained) as [number];
  await s.clock.sleeping(1);
  return term;
}

async function done(s: Setup): Promise<void> {
  s.renewals.open();
  await s.elector.stop();
  await s.f.store.close();
}

test('a standby takes a free lease and leads under its term', async () => {
  const s = await setup();
  try {
    const term = await lead(s);
    assert.equal(term, 1);
    assert.equal(s.elector.leaderTerm(), 1);
    const lease = await s.f.store.leases.get('dispatcher');
    assert.equal(lease?.holder, 'me');
  } finally {
    await done(s);
  }
});

test('the leader renews at a third of the TTL, which moves the lease on the database clock', async () => {
  const s = await setup();
  try {
    await lead(s);
    assert.equal(s.clock.asked.at(-1), 1_000, 'a renewal pause is a third of the TTL (jitter 0.5: none)');
    const before = await s.f.store.leases.get('dispatcher');
    await s.f.moveDb(1_000);
    s.clock.advance(1_000);
    await s.clock.sleeping(1);
    const after = await s.f.store.leases.get('dispatcher');
    assert.ok(after !== null && before !== null && after.expiresAt >= before.expiresAt + 1_000);
    assert.equal(s.elector.leaderTerm(), 1);
  } finally {
    await done(s);
  }
});

test('the jitter of each pause is drawn from the injected random source', async () => {
  for (const [draw, factor] of [
    [0, 0.9],
    [0.75, 1.05],
  ] as const) {
    const s = await setup(fixedRandom(draw));
    const other = await s.f.another();
    try {
      await other.leases.acquire({ name: 'dispatcher', holder: 'other', ttlMs: 60_000 });
      s.elector.start();
      await s.clock.sleeping(1);
      assert.equal(s.elector.leaderTerm(), null, 'a standby while another holds the lease');
      assert.deepEqual(s.clock.asked.map(Math.round), [Math.round(RETRY * factor)]);
    } finally {
      await other.close();
      await done(s);
    }
  }
});

test('a standby takes the lease once the holder lets it expire, under the next term', async () => {
  const s = await setup();
  const other = await s.f.another();
  try {
    await other.leases.acquire({ name: 'dispatcher', holder: 'other', ttlMs: TTL });
    s.elector.start();
    await s.clock.sleeping(1);
    s.clock.advance(RETRY);
    await s.clock.sleeping(1);
    assert.equal(s.elector.leaderTerm(), null, 'still held on the database clock');
    await s.f.moveDb(TTL);
    const gained = once(s.elector, 'gained');
    s.clock.advance(RETRY);
    assert.deepEqual(await gained, [2]);
  } finally {
    await other.close();
    await done(s);
  }
});

test('a refused renewal steps down at once', async () => {
  const s = await setup();
  const other = await s.f.another();
  try {
    await lead(s);
    // A pause longer than the TTL on the database clock: another process took the lease.
    await s.f.moveDb(TTL + 1);
    const taken = await other.leases.acquire({ name: 'dispatcher', holder: 'other', ttlMs: TTL });
    assert.equal(taken.ok && taken.lease.term, 2);
    s.clock.advance(1_000);
    await s.clock.sleeping(1);
    assert.equal(s.elector.leaderTerm(), null);
    assert.deepEqual(s.lost, [[1, 'refused']]);
  } finally {
    await other.close();
    await done(s);
  }
});

test('when renewals get no answer, the term ends with the trust window, counted from the last send', async () => {
  const s = await setup(fixedRandom(0.5), true);
  try {
    await lead(s); // acquired at 0: trusted until 2,700
    s.clock.advance(1_000); // a renewal is sent and its answer never comes
    await s.renewals.holding();
    s.clock.advance(1_699);
    assert.equal(s.elector.leaderTerm(), 1, 'trusted until 2,700');
    s.clock.advance(1);
    assert.equal(s.elector.leaderTerm(), null);
    assert.deepEqual(s.lost, [[1, 'trust-window']]);
  } finally {
    await done(s);
  }
});

test('a slow successful re-election does not extend the trust window', async () => {
  const s = await setup(fixedRandom(0.5), true);
  try {
    await lead(s);
    s.clock.advance(1_000); // the renewal is sent at 1,000: it may trust the term until 3,700
    await s.renewals.holding();
    s.clock.advance(1_500); // its answer arrives at 2,500, a success
    s.renewals.release();
    await s.clock.sleeping(1); // the next renewal is due at 3,500, and its answer is held too
    assert.equal(s.elector.leaderTerm(), 1);
    s.clock.advance(1_000);
    await s.renewals.holding();
    s.clock.advance(199);
    assert.equal(s.elector.leaderTerm(), 1, 'at 3,699 the window of the renewal sent at 1,000 holds');
    s.clock.advance(1);
    assert.equal(s.elector.leaderTerm(), null, 'at 3,700 it ends: not 2,500 + TTL - margin');
    assert.deepEqual(s.lost, [[1, 'trust-window']]);
  } finally {
    await done(s);
  }
});

test('after its trust window passed, re-taking its own running lease renews it before trusting it', async () => {
  const s = await setup(fixedRandom(0.5), true);
  const other = await s.f.another();
  try {
    await lead(s);
    s.clock.advance(1_000); // a renewal is sent; its answer comes only after the window
    await s.renewals.holding();
    s.clock.advance(1_700);
    assert.equal(s.elector.leaderTerm(), null);
    s.renewals.open();
    await s.clock.sleeping(1);
    // The lease has 1.5 s left on the database clock (less the test's own time) when it asks again.
    await s.f.moveDb(TTL - 1_500);
    const gained = once(s.elector, 'gained');
    s.clock.advance(RETRY);
    assert.deepEqual(await gained, [1]);
    await s.f.moveDb(2_000); // past the old expiry, within a renewed one
    const taken = await other.leases.acquire({ name: 'dispatcher', holder: 'other', ttlMs: TTL });
    assert.equal(taken.ok, false, 'the database lease was extended before the term was trusted again');
    assert.equal(s.elector.leaderTerm(), 1);
  } finally {
    await other.close();
    await done(s);
  }
});

test('stop resigns the lease, so a standby takes it at once under the next term', async () => {
  const s = await setup();
  const other = await s.f.another();
  try {
    await lead(s);
    await s.elector.stop();
    assert.equal(s.elector.leaderTerm(), null);
    assert.deepEqual(s.lost, [[1, 'stopped']]);
    const taken = await other.leases.acquire({ name: 'dispatcher', holder: 'other', ttlMs: TTL });
    assert.equal(taken.ok && taken.lease.term, 2);
  } finally {
    await other.close();
    await done(s);
  }
});
