import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { withFixture, type Harness } from './harness.js';

export function exerciseLeases(harness: Harness): void {
  describe('leases', () => {
    test('grants a free lease as term 1, expiring one TTL later on the database clock', () =>
      withFixture(harness, async ({ store }) => {
        const before = await store.now();
        const result = await store.leases.acquire({ name: 'dispatcher', holder: 'a', ttlMs: 5000 });
        const after = await store.now();
        assert.ok(result.ok);
        assert.equal(result.lease.term, 1);
        assert.equal(result.lease.holder, 'a');
        assert.ok(result.lease.acquiredAt >= before && result.lease.acquiredAt <= after);
        assert.equal(result.lease.expiresAt - result.lease.acquiredAt, 5000);
        assert.deepEqual(await store.leases.get('dispatcher'), result.lease);
      }));

    test('refuses a held lease and names its holder', () =>
      withFixture(harness, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        const result = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 });
        assert.equal(result.ok, false);
        assert.equal(result.lease?.holder, 'a');
        assert.equal(result.lease?.term, 1);
      }));

    test('keeps the term when the holder acquires its own live lease again', () =>
      withFixture(harness, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        const result = await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        assert.ok(result.ok);
        assert.equal(result.lease.term, 1);
      }));

    test('gives an expired lease to exactly one of two contenders, with a new term', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const other = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'old', ttlMs: 100 });
        await moveClock(150);
        const [first, second] = await Promise.all([
          store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 }),
          other.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 }),
        ]);
        assert.equal([first, second].filter((result) => result.ok).length, 1);
        const winner = first.ok ? first.lease : second.lease;
        assert.equal(winner?.term, 2);
        assert.equal((await store.leases.get('d'))?.holder, winner?.holder);
      }));

    test('renews only the current term: a replaced term is told it lost', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 100 });
        await moveClock(150);
        const second = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 });
        assert.ok(second.ok);
        const stale = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 5000 });
        assert.equal(stale.ok, false);
        assert.ok(!stale.ok);
        assert.equal(stale.reason, 'lost');
        assert.equal(stale.lease?.holder, 'b');
        assert.deepEqual(await store.leases.get('d'), second.lease);
      }));

    test('extends a live term from the database clock when renewed', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        // A term far longer than any pause of a loaded machine between the two statements.
        const first = await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 60_000 });
        assert.ok(first.ok);
        await moveClock(30);
        const result = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 60_000 });
        assert.ok(result.ok);
        assert.equal(result.lease.term, 1);
        assert.ok(result.lease.expiresAt > first.lease.expiresAt);
      }));

    test('refuses to renew an expired term even when nobody took the lease', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 50 });
        await moveClock(100);
        const result = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 5000 });
        assert.equal(result.ok, false);
      }));

    test('frees a resigned lease for the next holder with a higher term', () =>
      withFixture(harness, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 60000 });
        assert.equal(await store.leases.resign({ name: 'd', holder: 'b', term: 1 }), false);
        assert.equal(await store.leases.resign({ name: 'd', holder: 'a', term: 1 }), true);
        assert.equal(await store.leases.resign({ name: 'd', holder: 'a', term: 1 }), false);
        const second = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 60000 });
        assert.ok(second.ok);
        assert.equal(second.lease.term, 2);
      }));
  });
}
