/**
 * The plans of the leader's output trim (../output-trim.ts), not its speed: the live jobs come
 * through their partial indexes and the finished ones along `jobs_finished` from the cursor, and
 * output rows are only ever looked up by job, so a pass costs what changed, never every row kept.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { migratedReadOnly, planSteps } from '../../../test/support/sqlite-plans.js';
import { FINISHED_AFTER, TRIM_LIVE } from './output-trim.js';

let db: Database.Database;

before(async () => {
  db = await migratedReadOnly();
});

after(() => db.close());

test('the walk reads the finished jobs along jobs_finished from its cursor', () => {
  const steps = planSteps(db, FINISHED_AFTER, { at: 0, id: 0, until: 1, limit: 5 });
  assert.deepEqual(
    steps,
    ['SEARCH jobs USING INDEX jobs_finished (finished_at>? AND finished_at<?)'],
    steps.join('\n'),
  );
});

test("the live jobs' attempts are found through the live states' indexes, their rows by job", () => {
  const steps = planSteps(db, TRIM_LIVE, { keep: 1 });
  const all = steps.join('\n');
  for (const step of steps.filter((d) => /^(SCAN|SEARCH)/.test(d))) {
    assert.match(step, /^SEARCH |^SCAN jobs USING (COVERING )?INDEX jobs_(active\w*|queue)$/, all);
  }
  assert.match(all, /SEARCH o USING PRIMARY KEY \(job_id=\?\)/, all);
});
