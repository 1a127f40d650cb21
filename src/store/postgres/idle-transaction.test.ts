/**
 * A connection of the store whose transaction is left idle past the query timeout is ended by the
 * server (postgres-store.ts connectionConfig), so a stopped process no longer holds its row locks:
 * here a FOR SHARE on the lease row, as a leader's dispatch pass takes it, which kept a standby
 * from taking the expired lease while the leader was paused (test/e2e/cluster.test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { connectionConfig, openPostgresStore } from './postgres-store.js';

test('a transaction left idle past the query timeout is ended and its row lock released', async () => {
  const url = await freshPostgresUrl();
  await (await openPostgresStore({ url })).close(); // migrated
  const stopped = new pg.Client(connectionConfig({ url, queryTimeoutMs: 1_000 }));
  const other = new pg.Client({ connectionString: url, query_timeout: 10_000 });
  await stopped.connect();
  await other.connect();
  stopped.on('error', () => {}); // the server ends its session
  try {
    await other.query(
      "INSERT INTO leases (name, holder, term, acquired_at, expires_at) VALUES ('probe', 'a', 1, now(), now())",
    );
    await stopped.query('BEGIN');
    await stopped.query("SELECT term FROM leases WHERE name = 'probe' FOR SHARE");
    // The process stops here: it sends nothing more. The other's update waits for the lock only
    // until the server ends the idle transaction (1 s); without that it would wait as long as the
    // process stays stopped, and its own 10 s timeout would reject it.
    const updated = await other.query("UPDATE leases SET holder = 'b', term = 2 WHERE name = 'probe'");
    assert.equal(updated.rowCount, 1);
    await sleep(100);
    await assert.rejects(stopped.query('SELECT 1'), 'the stopped session was ended');
  } finally {
    await other.end();
    await stopped.end().catch(() => undefined);
  }
});
