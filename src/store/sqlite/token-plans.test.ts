/**
 * The plans of the reads of `tokens` that run on a schedule or an operator's command, not their
 * speed: every run of `baton up` with an API leaves a run token, so `tokens` grows as `jobs` does.
 * A retention batch (retention.ts) deletes a removed job's tokens by its id through `tokens_by_job`, and
 * `baton token list` the unrevoked ones through `tokens_live` (migration 0041), never all of them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { migratedReadOnly, planSteps } from '../../../test/support/sqlite-plans.js';
import { DELETE_TOKENS, PICK } from './retention.js';
import { LIST_LIVE } from './tokens.js';

let db: Database.Database;

before(async () => {
  db = await migratedReadOnly();
});

after(() => db.close());

const tokenSteps = (steps: string[]): string[] => steps.filter((step) => /\b(tokens|k)\b/.test(step));

test('a batch picks its jobs without reading tokens (a finished job keeps no token alive)', () => {
  const params = { afterAt: 0, afterId: 0, endAt: 1, endId: 1, cutoff: 1, limit: 5 };
  const steps = planSteps(db, PICK, params);
  assert.deepEqual(tokenSteps(steps), [], steps.join('\n'));
});

test('a batch deletes the run tokens of the jobs it removes by job id', () => {
  const steps = planSteps(db, DELETE_TOKENS, { ids: '[1,2]' });
  assert.deepEqual(
    tokenSteps(steps),
    ['SEARCH tokens USING COVERING INDEX tokens_by_job (job_id=?)'],
    steps.join('\n'),
  );
});

test('the token list reads the unrevoked tokens through tokens_live, in its order', () => {
  const steps = planSteps(db, LIST_LIVE, { now: 1 });
  assert.equal(steps[0], 'SCAN tokens USING INDEX tokens_live', steps.join('\n'));
  assert.ok(!steps.some((step) => step.includes('TEMP B-TREE')), steps.join('\n'));
});
