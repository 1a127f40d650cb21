/**
 * A placement wakes every process's waiters but the placing store's own (wakeups.ts, migration
 * 0024): `baton up` hands the jobs its dispatcher placed to its runner without one. A waiter for
 * placements only (a runner's) sleeps through every other change. Two stores on one database
 * stand for two processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import type { Store } from '../store.js';
import type { Waiter } from '../wakeups.js';
import { givenHost, givenLeader } from '../conformance/dispatch.js';
import { settle } from '../conformance/harness.js';
import { openPostgresStore } from './postgres-store.js';

/** Whether the waiter is woken within `ms`. */
async function wokeWithin(waiter: Waiter, ms: number): Promise<boolean> {
  const t0 = performance.now();
  await waiter.wait(ms);
  return performance.now() - t0 < ms - 10;
}

/** Two stores on one fresh database: two processes, `mine` and `theirs`. */
async function twoStores(): Promise<{ mine: Store; theirs: Store; close: () => Promise<void> }> {
  const url = await freshPostgresUrl();
  const [mine, theirs] = [await openPostgresStore({ url }), await openPostgresStore({ url })];
  return { mine, theirs, close: async () => void (await Promise.all([mine.close(), theirs.close()])) };
}

test("a placement wakes another store's waiters, not the placing store's own", async () => {
  const { mine, theirs, close } = await twoStores();
  const [ownWaiter, otherWaiter] = [await mine.wakeups.waiter(), await theirs.wakeups.waiter()];
  try {
    await givenHost(mine);
    const term = await givenLeader(mine, 'leader', 600_000);
    const [a, b] = [(await mine.jobs.enqueue({ key: 'a' })).job, (await mine.jobs.enqueue({ key: 'b' })).job];
    // Both listen (the enqueues woke both), then go quiet.
    assert.ok((await wokeWithin(ownWaiter, 20_000)) && (await wokeWithin(otherWaiter, 20_000)));
    await Promise.all([settle(ownWaiter), settle(otherWaiter)]);

    assert.ok((await mine.dispatch.place({ id: a.id, host: 'box-1', term })).ok);
    assert.ok(await wokeWithin(otherWaiter, 20_000), 'the placement woke the other store');
    assert.equal(await wokeWithin(ownWaiter, 1_000), false, 'the placement woke the store that made it');

    assert.ok((await theirs.dispatch.place({ id: b.id, host: 'box-1', term })).ok);
    assert.ok(await wokeWithin(ownWaiter, 20_000), "another store's placement wakes this one");
  } finally {
    ownWaiter.close();
    otherWaiter.close();
    await close();
  }
});

test('a waiter for placements only is woken by a placement, not by an enqueue or an end', async () => {
  const { mine, theirs, close } = await twoStores();
  const [runner, any] = [await theirs.wakeups.waiter('placements'), await theirs.wakeups.waiter()];
  try {
    const { session } = await givenHost(mine);
    const term = await givenLeader(mine, 'leader', 600_000);
    await Promise.all([settle(runner), settle(any)]);

    const { job } = await mine.jobs.enqueue({ key: 'a' });
    assert.ok(await wokeWithin(any, 20_000), 'the enqueue woke a waiter for any change');
    assert.equal(await wokeWithin(runner, 1_000), false, 'the enqueue woke a waiter for placements');

    const placed = await mine.dispatch.place({ id: job.id, host: 'box-1', term });
    assert.ok(placed.ok);
    assert.ok(await wokeWithin(runner, 20_000), 'the placement woke a waiter for placements');
    await settle(any);
    const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
    assert.ok((await mine.jobs.finish({ ...guard, status: 'failed' })).ok);
    assert.ok(await wokeWithin(any, 20_000), 'the end woke a waiter for any change');
    assert.equal(await wokeWithin(runner, 1_000), false, 'the end woke a waiter for placements');
  } finally {
    runner.close();
    any.close();
    await close();
  }
});
