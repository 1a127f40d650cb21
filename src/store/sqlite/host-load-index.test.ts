import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { HOST_LIST } from './hosts.js';
import { openSqliteStore } from './sqlite-store.js';

// The plan, not the speed: a subquery whose predicate does not imply jobs_active_by_host's
// scans the whole jobs table, finished history included, once per host (issue 22).
test("hosts.list finds each host's active jobs through jobs_active_by_host, never by a scan", async () => {
  const path = await sqliteDatabase().fresh();
  await openSqliteStore({ path }).close();
  const db = new Database(path, { readonly: true });
  try {
    const steps = (db.prepare(`EXPLAIN QUERY PLAN ${HOST_LIST}`).all() as { detail: string }[]).map(
      (r) => r.detail,
    );
    const onJobs = steps.filter((d) => / j\b/.test(d));
    assert.equal(onJobs.length, 3, steps.join('\n'));
    for (const d of onJobs)
      assert.match(d, /^SEARCH j USING INDEX jobs_active_by_host \(host=\?\)$/, steps.join('\n'));
  } finally {
    db.close();
  }
});
