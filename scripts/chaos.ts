/**
 * Long fault-injection soaks (see test/chaos/ and docs/decisions/0005-chaos.md):
 *
 *   npm run chaos -- --minutes N [--seed S] [--engine sqlite|postgres] [--no-fencing]
 *                    [--workers N] [--out FILE] [--keep]
 *
 * No --engine: PostgreSQL, on a throwaway server this run starts (it restarts it once).
 * Prints the seed first, writes the report to stdout and to FILE (default
 * .baton/chaos/report-<engine>-<seed>.md), and exits 0 when no invariant broke, 1 when any did;
 * so with --no-fencing (the negative control) it must exit 1.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { newSeed } from '../test/chaos/prng.js';
import { formatReport } from '../test/chaos/report.js';
import { runScenario } from '../test/chaos/scenario.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string' },
    engine: { type: 'string', default: 'postgres' },
    'no-fencing': { type: 'boolean', default: false },
    workers: { type: 'string', default: '4' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

const seed = values.seed === undefined ? newSeed() : Number(values.seed);
const minutes = Number(values.minutes);
const engine = values.engine;
if (!Number.isSafeInteger(seed) || !(minutes > 0) || (engine !== 'sqlite' && engine !== 'postgres')) {
  process.stderr.write(
    'usage: npm run chaos -- --minutes N [--seed S] [--engine sqlite|postgres] [--no-fencing]\n',
  );
  process.exit(2);
}
process.stdout.write(`seed ${seed}\n`);
const fencing = !values['no-fencing'];
const command =
  `npm run chaos -- --minutes ${minutes} --seed ${seed} --engine ${engine}` +
  (fencing ? '' : ' --no-fencing');
// Ctrl-C stops the run but still cleans up its processes and its server; a second one exits.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(`${signal}: ${stop.signal.aborted ? 'exiting now' : 'stopping; cleaning up'}\n`);
    if (stop.signal.aborted) process.exit(130);
    stop.abort();
  });
}
const result = await runScenario({
  engine,
  seed,
  durationMs: Math.round(minutes * 60_000),
  fencing,
  workers: Number(values.workers),
  keep: values.keep,
  signal: stop.signal,
  log: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
}).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  return process.exit(stop.signal.aborted ? 130 : 1);
});
const report = formatReport(result, command);
const out = values.out ?? `.baton/chaos/report-${engine}-${seed}.md`;
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `# Baton chaos report\n\n${report}`);
process.stdout.write(`${report}\nreport written to ${out}\n`);
process.exit(result.violations === 0 ? 0 : 1);
