/**
 * Wake-ups: a waiter learns of work that appeared, or capacity that freed, in any process,
 * without polling the queue; and a wake that arrives while its owner is busy is kept for the
 * next wait. The bounds below are liveness limits (a wait whose timeout is a minute must return
 * within seconds), not performance figures.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import type { Store } from '../store.js';
import type { Waiter } from '../wakeups.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, settle, sleep, withFixture, type Harness } from './harness.js';

const LONG = 60_000;

/** 'woke' when the waiter returns within the liveness bound, else 'timeout'. */
async function woke(waiter: Waiter): Promise<'woke' | 'timeout'> {
  const limit = new AbortController();
  const bound = delay(20_000, 'timeout' as const, { signal: limit.signal }).catch(() => 'timeout' as const);
  const outcome = await Promise.race([waiter.wait(LONG).then(() => 'woke' as const), bound]);
  limit.abort();
  return outcome;
}

async function waiterOn(other: Store): Promise<Waiter> {
  const waiter = await other.wakeups.waiter();
  await settle(waiter);
  return waiter;
}

/** A fixture whose second store ("another process") waits; the body writes through the first. */
function withWaiterElsewhere(
  harness: Harness,
  body: (store: Store, waiter: Waiter) => Promise<void>,
): Promise<void> {
  return withFixture(harness, async ({ store, openAnother }) => {
    const other = await openAnother();
    const waiter = await waiterOn(other);
    try {
      await body(store, waiter);
    } finally {
      waiter.close();
      await other.close();
    }
  });
}

export function exerciseWakeups(harness: Harness): void {
  describe('wake-ups', () => {
    test('wakes a waiter in another process when a job is enqueued', () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        const pending = woke(waiter);
        await store.jobs.enqueue({ key: 'k' });
        assert.equal(await pending, 'woke');
      }));

    test('keeps a wake that came while the waiter was busy, for its next wait', () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        await store.jobs.enqueue({ key: 'k' });
        await sleep(200); // the owner is busy elsewhere while the wake arrives
        assert.equal(await woke(waiter), 'woke');
      }));

    test("wakes this store's own waiters on its own writes", () =>
      withFixture(harness, async ({ store }) => {
        const waiter = await waiterOn(store);
        try {
          const pending = woke(waiter);
          await store.jobs.enqueue({ key: 'k' });
          assert.equal(await pending, 'woke');
        } finally {
          waiter.close();
        }
      }));

    test('wakes on a requeue, a placement, the end of a placed job and a lock release', () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'a' });
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null);
        await settle(waiter);
        const policy = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };
        let pending = woke(waiter);
        await store.dispatch.requeue({
          id: first.id,
          session: session.id,
          epoch: first.epoch,
          reason: 'crash',
          policy,
        });
        assert.equal(await pending, 'woke', 'requeue');

        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const { job } = await store.jobs.enqueue({ key: 'b' });
        await settle(waiter);
        pending = woke(waiter);
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(placed.ok);
        assert.equal(await pending, 'woke', 'placement');
        pending = woke(waiter);
        const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
        assert.ok((await store.jobs.finish({ ...guard, status: 'failed' })).ok);
        assert.equal(await pending, 'woke', 'end of a placed job (and its lock release)');

        const lock = await store.workspaceLocks.acquire({ workspace: 'w', session: session.id });
        assert.ok(lock.ok);
        await settle(waiter);
        pending = woke(waiter);
        assert.ok(
          (
            await store.workspaceLocks.release({
              workspace: 'w',
              session: session.id,
              epoch: lock.lock.epoch,
            })
          ).ok,
        );
        assert.equal(await pending, 'woke', 'lock release');
      }));

    test('wakes on the end of a placed job, however it ends', () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        const attempts = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };
        const placedJob = async (key: string, attemptMax = 3) => {
          const { job } = await store.jobs.enqueue({ key, attemptMax });
          const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
          assert.ok(placed.ok);
          await settle(waiter);
          return { id: placed.job.id, session: runner.id, epoch: placed.job.epoch };
        };
        const ends: [string, (grant: { id: number; session: number; epoch: number }) => Promise<unknown>][] =
          [
            ['finish', (grant) => store.jobs.finish({ ...grant, status: 'failed' })],
            [
              'finish and claim the next',
              (grant) => store.jobs.finishAndClaimNext({ ...grant, status: 'failed' }),
            ],
            ['cancel', (grant) => store.jobs.cancel({ id: grant.id })],
            ['requeue', (grant) => store.dispatch.requeue({ ...grant, reason: 'crash', policy: attempts })],
          ];
        for (const [index, [what, end]] of ends.entries()) {
          const guard = await placedJob(`p${index}`);
          const pending = woke(waiter);
          await end(guard);
          assert.equal(await pending, 'woke', what);
        }
        const last = await placedJob('q', 1);
        const pending = woke(waiter);
        const failed = await store.dispatch.requeue({ ...last, reason: 'crash', policy: attempts });
        assert.ok(failed.ok && failed.job.status === 'failed');
        assert.equal(await pending, 'woke', 'a requeue that fails the job, its attempts spent');
      }));

    // A placed job's start frees no slot and places nothing (migration 0024 / SQLite 0022); its
    // wake-up made every dispatcher and runner read the queue beside the run that was starting.
    test("raises no wake-up for a placed job's start", () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(placed.ok);
        await settle(waiter);
        const started = await store.jobs.start({ id: job.id, session: runner.id, epoch: placed.job.epoch });
        assert.ok(started.ok && started.job.status === 'running');
        const t0 = performance.now();
        await waiter.wait(1_000);
        assert.ok(performance.now() - t0 >= 990, "a wake-up came from the job's start");
      }));

    // A pull-mode worker's loop is the hot path, and a NOTIFY serialises the commits that send it
    // (migration 0006). A loaded machine can only make a wake late, never early: no slow flake.
    test("raises no wake-up for a pull-mode worker's own claims and finishes", () =>
      withWaiterElsewhere(harness, async (store, waiter) => {
        const session = await givenSession(store);
        for (const key of ['a', 'b', 'c']) await store.jobs.enqueue({ key });
        await settle(waiter);
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null);
        let job = first;
        for (let index = 0; index < 2; index++) {
          const { finished, next } = await store.jobs.finishAndClaimNext({
            id: job.id,
            session: session.id,
            epoch: job.epoch,
            status: 'done',
            start: true,
          });
          assert.ok(finished.ok && next !== null);
          job = next;
        }
        assert.ok(
          (await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status: 'done' })).ok,
        );
        const t0 = performance.now();
        await waiter.wait(1_000);
        assert.ok(performance.now() - t0 >= 990, 'a wake-up came from the worker loop');
      }));

    test('a closed waiter returns from its wait', () =>
      withFixture(harness, async ({ store }) => {
        const waiter = await store.wakeups.waiter();
        await settle(waiter);
        const pending = woke(waiter);
        waiter.close();
        assert.equal(await pending, 'woke');
      }));
  });
}
