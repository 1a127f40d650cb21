/**
 * The bench's targets table (targets.ts): a ratio that two decimals would round onto a target's
 * tenth is shown with three, so that a MISS never reads "1.00× ≤ 1×".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Plan } from './report.js';
import { targets } from './targets.js';

const plan: Plan = {
  ...{ n: 1_000, sqliteN: 500, reps: 3, durableMs: 1_000, latencySamples: 20, wakeFallbackMs: 1_000 },
  ...{ scaleSmall: 1_000, scaleLarge: 250_000, sqliteScaleLarge: 100_000, scaleClaims: 50, cliRuns: 10 },
  ...{ failoverTtlSeconds: 3, failoverReps: 1, agentStartSamples: 8, httpRoundTrips: 50 },
  fleet: { tiers: [10, 100, 1_000], activePerHost: 8, queued: 10_000, finished: 100_000, ticks: 5 },
  heartbeats: { start: 500, max: 16_000, periods: 2, tolerance: 0.25 },
  ...{ ledgerRowsSmall: 20_000, ledgerRowsLarge: 200_000 },
};

const row = (figures: Record<string, unknown>, measure: RegExp) => {
  const found = targets(figures, null, plan).find((entry) => measure.test(entry.measure));
  assert.ok(found !== undefined, `a row for ${measure}`);
  return found;
};

test('a ratio two decimals would round onto a tenth shows three; others show two', () => {
  const figures = {
    p50VsGraphile: 1.004,
    httpVsDirect: 0.4981,
    ledgerOverhead: 1.444,
    ratioRuns: { p50VsGraphile: [0.98, 1.13, 1.004], httpVsDirect: [0.48, 0.4981, 0.5] },
  };
  const p50 = row(figures, /^p50 latency/);
  assert.deepEqual([p50.value, p50.pass, p50.runs], ['1.004×', false, '0.98, 1.13, 1.004']);
  const http = row(figures, /over HTTP/);
  assert.deepEqual([http.value, http.pass, http.runs], ['0.498×', false, '0.48, 0.498, 0.50']);
  const ledger = row(figures, /ledger overhead, PG/);
  assert.deepEqual([ledger.value, ledger.pass], ['1.44×', false]);
  assert.equal(row({ p50VsGraphile: 1 }, /^p50 latency/).value, '1.00×');
  assert.equal(row({}, /^p50 latency/).value, 'not measured');
});
