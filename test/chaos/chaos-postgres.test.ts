/** The short, fixed-seed fault run on PostgreSQL, on a server of its own (it restarts it). */
import { test } from 'node:test';
import { assertClean, SHORT } from './short-run.js';

test('postgres: a short fault run (kills, pauses, proxy faults, backend kills, a restart) breaks no invariant', () =>
  assertClean({ engine: 'postgres', seed: SHORT.seed, durationMs: SHORT.postgresMs, fencing: true }));
