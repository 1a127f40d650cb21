/**
 * Issue 14, item 9: a `baton up` whose SQLite file is deleted underneath it stops with one clear
 * error instead of serving a file no path names while new CLI calls make another database.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { sqliteDatabase } from '../support/databases.js';
import { clusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

test('baton up stops with a clear error when its SQLite file is deleted while it runs', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const up = c.up('a');
    await up.waitRunning();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${c.url}${suffix}`, { force: true });
    await waitUntil(() => up.child.exitCode !== null, 15_000, 'baton up to stop');
    assert.equal(up.child.exitCode, 3, up.log());
    assert.match(up.log(), /baton: the database file .* was deleted while baton up had it open/);
  } finally {
    await c.close();
  }
});
