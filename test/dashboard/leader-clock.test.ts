/**
 * The dashboard's Leader view says when the dispatcher's lease expires on the database's clock, as
 * Cluster.hosts() judges hosts: it subtracted the serving process's own clock, so a server whose
 * clock is off from the database's (here the database's runs an hour ahead) told a one-minute
 * lease as hours away, or as expired.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_CLOCK_ENV, UNSAFE_ENV } from '../../src/store/test-switches.js';
import { moveClockOf } from '../support/clock.js';
import { sqliteDatabase } from '../support/databases.js';
import { startTestServer } from './server.js';

const HOUR = 3_600_000;

test("the Leader view's lease expiry is judged on the database's clock, not the server's", async () => {
  const db = sqliteDatabase();
  const url = await db.fresh();
  // The server's store reads the shared test clock, which the test moves an hour ahead.
  process.env[UNSAFE_ENV] = '1';
  process.env[TEST_CLOCK_ENV] = 'shared';
  await moveClockOf(db, url, HOUR);
  const server = await startTestServer(url);
  try {
    const session = await server.store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
    const held = await server.store.leases.acquire({
      name: 'dispatcher',
      holder: String(session.id),
      ttlMs: 60_000,
    });
    assert.ok(held.ok);
    assert.ok(held.lease.expiresAt - Date.now() > HOUR / 2, 'the database clock runs ahead of this one');
    const page = await (await fetch(`${server.url}/leader`)).text();
    const expires = /\(in ([\d.]+) (ms|s|min|h)\)/.exec(page);
    assert.ok(expires !== null, page);
    assert.equal(expires[2], 's', `a one-minute lease expires in seconds: ${expires[0]}`);
    assert.ok(Number(expires[1]) > 30 && Number(expires[1]) <= 60, expires[0]);
  } finally {
    await server.close();
    delete process.env[UNSAFE_ENV];
    delete process.env[TEST_CLOCK_ENV];
  }
});
