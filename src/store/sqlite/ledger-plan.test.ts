/**
 * The plan of the sealer's read of the last sealed id, not its speed: every seal reads
 * `max(last_id)` over audit_checkpoints (sealedThrough in ledger.ts), and under load a checkpoint
 * is written every busy round (docs/decisions/0011), so it must be one probe of an index, never a
 * scan of every checkpoint (migration 0030).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { openSqliteStore } from './sqlite-store.js';

let db: Database.Database;

before(async () => {
  const path = await sqliteDatabase().fresh();
  await openSqliteStore({ path }).close();
  db = new Database(path, { readonly: true });
});

after(() => db.close());

test('the last sealed id is read from an index on last_id, never by a scan of every checkpoint', () => {
  const steps = (
    db.prepare('EXPLAIN QUERY PLAN SELECT coalesce(max(last_id), 0) AS n FROM audit_checkpoints').all() as {
      detail: string;
    }[]
  ).map((r) => r.detail);
  const all = steps.join('\n');
  assert.deepEqual(
    steps,
    ['SEARCH audit_checkpoints USING COVERING INDEX audit_checkpoints_by_last_id'],
    all,
  );
});
