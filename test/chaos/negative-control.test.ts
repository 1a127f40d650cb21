/**
 * The negative control: the same short scenario with the workers' fencing switched off (a
 * test-only switch) must make the checker fail. Otherwise the checker proves nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatReport } from './report.js';
import { runScenario } from './scenario.js';
import { SHORT } from './short-run.js';

test('sqlite without fencing: the fenced-writes checker finds stale effects', async () => {
  const r = await runScenario({ engine: 'sqlite', seed: SHORT.seed, durationMs: SHORT.durationMs, fencing: false });
  const fenced = r.checks.find((c) => c.name === 'fenced-writes');
  assert.ok(fenced !== undefined && fenced.count > 0, formatReport(r, 'negative control (npm test)'));
  assert.match(fenced.violations[0]?.message ?? '', /accepted after epoch \d+ was granted/);
});
