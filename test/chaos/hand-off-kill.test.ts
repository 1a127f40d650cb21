/** The hand-off-kill scenario on SQLite, and its negative control (docs/decisions/0024). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHandOffKill } from './hand-off-kill.js';

const SEED = 20261204;

test('sqlite: waiting workers SIGKILLed after a hand-off or before a finish lose no acknowledged work and run nothing twice under one epoch', async () => {
  const r = await runHandOffKill({ url: null, seed: SEED });
  assert.ok(r.kills.handed > 0 && r.kills.running > 0, JSON.stringify(r.kills));
  assert.equal(r.violations, 0, JSON.stringify(r.checks, null, 2));
});

test('negative control: acknowledging finishes before their commit makes the checker find lost ones', async () => {
  const r = await runHandOffKill({ url: null, seed: SEED, ackEarly: true });
  const acked = r.checks.find((c) => c.name === 'hand-off-acknowledged');
  assert.ok(acked !== undefined && acked.count > 0, JSON.stringify(r.checks, null, 2));
});
