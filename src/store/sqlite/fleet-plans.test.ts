/**
 * The plans of the queries a dispatcher tick runs against the whole fleet, not their speed: each
 * must reach the active jobs through a partial index, so that its cost grows with the fleet and
 * never with the finished history (issue 22).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { ORPHANED_JOBS } from './dispatch.js';
import { HOST_LIST } from './hosts.js';
import { openSqliteStore } from './sqlite-store.js';

let db: Database.Database;

before(async () => {
  const path = await sqliteDatabase().fresh();
  await openSqliteStore({ path }).close();
  db = new Database(path, { readonly: true });
});

after(() => db.close());

/** The plan's steps that read the jobs table (aliased j). */
function onJobs(sql: string, ...params: unknown[]): { steps: string[]; all: string } {
  const steps = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
    (r) => r.detail,
  );
  return { steps: steps.filter((d) => / j\b/.test(d)), all: steps.join('\n') };
}

// A subquery whose predicate does not imply the partial index's scans the whole jobs table,
// finished history included, once per host.
test("hosts.list finds each host's active jobs through jobs_active_by_host, never by a scan", () => {
  const { steps, all } = onJobs(HOST_LIST);
  assert.equal(steps.length, 3, all);
  for (const d of steps) assert.match(d, /^SEARCH j USING INDEX jobs_active_by_host \(host=\?\)$/, all);
});

test('the rescue sweep reads only the active jobs, never the whole table in id order', () => {
  const { steps, all } = onJobs(ORPHANED_JOBS, 100);
  assert.equal(steps.length, 1, all);
  assert.match(steps[0] ?? '', /^SCAN j USING INDEX jobs_active$/, all);
});
