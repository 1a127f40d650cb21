/**
 * Issue 14, item 5, seen again under load: hosts that were never killed fenced themselves with "a
 * heartbeat call did not answer", their beats queued for a connection behind slower calls that
 * held the whole pool. Here ten calls on a real server wait behind a lock held from outside, so
 * every connection of the store's pool of ten is taken for as long as the test wants; the host's
 * heartbeat, an agent's session heartbeat and the leader's renewal must still answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { waitUntil } from '../../../test/support/wait.js';
import { openPostgresStore } from './postgres-store.js';

test('heartbeats and lease renewals answer while slow calls hold every connection of the pool', async () => {
  const url = await freshPostgresUrl();
  // A long query timeout: the slow calls must hold their connections until the test lets go,
  // not give them back after 5 s and so let a queued beat through.
  const store = await openPostgresStore({ url, poolSize: 10, queryTimeoutMs: 120_000 });
  const outside = new pg.Client({ connectionString: url });
  await outside.connect();
  try {
    const s = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1, name: 'up' });
    const host = { session: s.id, ramTotalMb: 4096, ramReservedMb: 0, ramFreeMb: 4096, slotsMax: 2 };
    await store.hosts.register({ name: 'box-1', ...host });
    const lease = await store.leases.acquire({ name: 'dispatcher', holder: String(s.id), ttlMs: 60_000 });
    assert.ok(lease.ok);

    await outside.query('BEGIN');
    await outside.query('LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE');
    let settled = 0;
    const slow = Array.from({ length: 10 }, () =>
      store.workspaces.list().finally(() => {
        settled += 1;
      }),
    );
    const waiting = async (): Promise<number> => {
      // Within a transaction, pg_stat_activity is read once and kept, unless told to read afresh.
      await outside.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await outside.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
      );
      return rows[0]?.n ?? 0;
    };
    await waitUntil(async () => (await waiting()) === 10, 60_000, 'ten calls waiting on the lock');

    assert.equal(await store.hosts.heartbeat({ name: 'box-1', session: s.id, ramFreeMb: 1 }), true);
    assert.deepEqual(await store.sessions.heartbeat({ session: s.id }), { ok: true });
    const renewed = await store.leases.renew({
      name: 'dispatcher',
      holder: String(s.id),
      term: lease.lease.term,
      ttlMs: 60_000,
    });
    assert.ok(renewed.ok, 'the renewal answered');
    assert.equal(settled, 0, 'the slow calls still held every connection of the pool');
    assert.equal(await waiting(), 10);

    await outside.query('ROLLBACK');
    assert.equal((await Promise.all(slow)).length, 10);
  } finally {
    await outside.end();
    await store.close();
  }
});
