/** The short, fixed-seed fault run on SQLite (longer soaks: `npm run chaos`). */
import { test } from 'node:test';
import { assertClean, SHORT } from './short-run.js';

test('sqlite: a short fault run (kills, pauses, kills inside BEGIN IMMEDIATE, clock offsets) breaks no invariant', () =>
  assertClean({ engine: 'sqlite', seed: SHORT.seed, durationMs: SHORT.durationMs, fencing: true }));
