/** The batch-kill scenario on SQLite, and its negative control (docs/decisions/0017). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBatchKill } from './batch-kill.js';

const SEED = 20261202;

test('sqlite: batch workers SIGKILLed between fetch and completion lose no acknowledged completion and run nothing twice under one epoch', async () => {
  const r = await runBatchKill({ url: null, seed: SEED });
  assert.ok(r.kills > 0, 'the scenario killed workers');
  assert.equal(r.violations, 0, JSON.stringify(r.checks, null, 2));
});

test('negative control: acknowledging completions before their commit makes the checker find lost ones', async () => {
  const r = await runBatchKill({ url: null, seed: SEED, ackEarly: true });
  const acked = r.checks.find((c) => c.name === 'batch-acknowledged');
  assert.ok(acked !== undefined && acked.count > 0, JSON.stringify(r.checks, null, 2));
});
