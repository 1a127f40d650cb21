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
  const r = await runScenario({
    engine: 'sqlite',
    seed: SHORT.seed,
    durationMs: SHORT.durationMs,
    fencing: false,
  });
  const fenced = r.checks.find((c) => c.name === 'fenced-writes');
  assert.ok(fenced !== undefined && fenced.count > 0, formatReport(r, 'negative control (npm test)'));
  // A stale effect lands either after the next epoch was granted or after its own claim ended.
  for (const v of fenced.violations) {
    assert.match(v.message, /accepted after (epoch \d+ was granted|its claim was released)/);
  }
});
