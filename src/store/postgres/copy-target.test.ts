/**
 * `baton db copy`'s reading of its target (docs/decisions/0049, review fix 4): a database an older
 * Baton's `baton init` made lacks the later tables, and the state check counts only the tables it has.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { readTargetState } from './copy-target.js';
import { openPostgresStore } from './postgres-store.js';

test("reads the state of a target an older Baton's init made (fewer tables), without a raw SQL error", async () => {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  const url = await postgresDatabase(first).empty();
  // Version 34: no job_retention (0035) nor any later table.
  await (await openPostgresStore({ url, migrateTo: 34 })).close();
  const state = await readTargetState(url);
  const { role, ...rest } = state;
  assert.ok(role.length > 0 && role !== '?', `the role is read: ${role}`);
  assert.deepEqual(rest, {
    batonTables: true,
    otherTables: [],
    nonEmpty: {},
    schema: 'public',
    canCreate: true,
  });
});
