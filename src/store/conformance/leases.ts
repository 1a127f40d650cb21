import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { withFixture, type Harness } from './harness.js';

export function exerciseLeases(h: Harness): void {
  describe('leases', () => {
    test('grants a free lease as term 1, expiring one TTL later on the database clock', () =>
      withFixture(h, async ({ store }) => {
        const before = await store.now();
        const r = await store.leases.acquire({ name: 'dispatcher', holder: 'a', ttlMs: 5000 });
        const after = await store.now();
        assert.ok(r.ok);
        assert.equal(r.lease.term, 1);
        assert.equal(r.lease.holder, 'a');
        assert.ok(r.lease.acquiredAt >= before && r.lease.acquiredAt <= after);
        assert.equal(r.lease.expiresAt - r.lease.acquiredAt, 5000);
        assert.deepEqual(await store.leases.get('dispatcher'), r.lease);
      }));

    test('refuses a held lease and names its holder', () =>
      withFixture(h, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        const r = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 });
        assert.equal(r.ok, false);
        assert.equal(r.lease?.holder, 'a');
        assert.equal(r.lease?.term, 1);
      }));

    test('keeps the term when the holder acquires its own live lease again', () =>
      withFixture(h, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        const r = await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 });
        assert.ok(r.ok);
        assert.equal(r.lease.term, 1);
      }));

    test('gives an expired lease to exactly one of two contenders, with a new term', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const other = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'old', ttlMs: 100 });
        await moveClock(150);
        const [a, b] = await Promise.all([
          store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 5000 }),
          other.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 }),
        ]);
        assert.equal([a, b].filter((r) => r.ok).length, 1);
        const winner = a.ok ? a.lease : b.lease;
        assert.equal(winner?.term, 2);
        assert.equal((await store.leases.get('d'))?.holder, winner?.holder);
      }));

    test('renews only the current term: a replaced term is told it lost', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 100 });
        await moveClock(150);
        const b = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 5000 });
        assert.ok(b.ok);
        const stale = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 5000 });
        assert.equal(stale.ok, false);
        assert.ok(!stale.ok);
        assert.equal(stale.reason, 'lost');
        assert.equal(stale.lease?.holder, 'b');
        assert.deepEqual(await store.leases.get('d'), b.lease);
      }));

    test('extends a live term from the database clock when renewed', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        // A term far longer than any pause of a loaded machine between the two statements.
        const a = await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 60_000 });
        assert.ok(a.ok);
        await moveClock(30);
        const r = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 60_000 });
        assert.ok(r.ok);
        assert.equal(r.lease.term, 1);
        assert.ok(r.lease.expiresAt > a.lease.expiresAt);
      }));

    test('refuses to renew an expired term even when nobody took the lease', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 50 });
        await moveClock(100);
        const r = await store.leases.renew({ name: 'd', holder: 'a', term: 1, ttlMs: 5000 });
        assert.equal(r.ok, false);
      }));

    test('frees a resigned lease for the next holder with a higher term', () =>
      withFixture(h, async ({ store }) => {
        await store.leases.acquire({ name: 'd', holder: 'a', ttlMs: 60000 });
        assert.equal(await store.leases.resign({ name: 'd', holder: 'b', term: 1 }), false);
        assert.equal(await store.leases.resign({ name: 'd', holder: 'a', term: 1 }), true);
        assert.equal(await store.leases.resign({ name: 'd', holder: 'a', term: 1 }), false);
        const b = await store.leases.acquire({ name: 'd', holder: 'b', ttlMs: 60000 });
        assert.ok(b.ok);
        assert.equal(b.lease.term, 2);
      }));
  });
}
