/** The short chaos run `npm test` makes: a fixed seed, a few dozen seconds of faults. */
import assert from 'node:assert/strict';
import { formatReport } from './report.js';
import { runScenario, type ScenarioOptions } from './scenario.js';

/** PostgreSQL has more fault kinds to cover, so its run is longer. */
export const SHORT = { seed: 20261129, durationMs: 20_000, postgresMs: 30_000 } as const;

export async function assertClean(options: ScenarioOptions): Promise<void> {
  const r = await runScenario(options);
  assert.equal(r.violations, 0, formatReport(r, `npm test (seed ${options.seed})`));
}
