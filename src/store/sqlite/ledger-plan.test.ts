/**
 * The plan of the sealer's read of the last sealed id, not its speed: every seal reads
 * `max(last_id)` over audit_checkpoints (sealedThrough in ledger.ts), and under load a checkpoint
 * is written every busy round (docs/decisions/0011), so it must be one probe of an index, never a
 * scan of every checkpoint (migration 0030).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { migratedReadOnly, planSteps } from '../../../test/support/sqlite-plans.js';

let db: Database.Database;

before(async () => {
  db = await migratedReadOnly();
});

after(() => db.close());

test('the last sealed id is read from an index on last_id, never by a scan of every checkpoint', () => {
  const steps = planSteps(db, 'SELECT coalesce(max(last_id), 0) AS n FROM audit_checkpoints');
  const all = steps.join('\n');
  assert.deepEqual(
    steps,
    ['SEARCH audit_checkpoints USING COVERING INDEX audit_checkpoints_by_last_id'],
    all,
  );
});
