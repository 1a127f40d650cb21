/**
 * Long fault-injection soaks (see test/chaos/ and docs/decisions/0005-chaos.md):
 *
 *   npm run chaos -- --minutes N [--seed S] [--engine sqlite|postgres] [--no-fencing]
 *                    [--workers N] [--out FILE] [--keep]
 *   npm run chaos -- --scenario batch-kill [--seed S] [--engine sqlite|postgres] [--no-fencing]
 *   npm run chaos -- --scenario hand-off-kill [--seed S] [--engine sqlite|postgres] [--no-fencing]
 *
 * batch-kill (test/chaos/batch-kill.ts, docs/decisions/0017): batch workers SIGKILLed between a
 * batch's fetch and its completion; --no-fencing is its negative control (completions acknowledged
 * before their commit), which must exit 1. hand-off-kill (test/chaos/hand-off-kill.ts,
 * docs/decisions/0024): waiting workers SIGKILLed right after an enqueue handed them a job, or
 * between a take and its finish; --no-fencing is the same negative control.
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
import { runBatchKill } from '../test/chaos/batch-kill.js';
import { runHandOffKill } from '../test/chaos/hand-off-kill.js';
import { startChaosPostgres } from '../test/chaos/pg-server.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string' },
    engine: { type: 'string', default: 'postgres' },
    'no-fencing': { type: 'boolean', default: false },
    workers: { type: 'string', default: '4' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    scenario: { type: 'string', default: 'faults' },
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
if (values.scenario === 'batch-kill' || values.scenario === 'hand-off-kill') {
  const pg = engine === 'postgres' ? await startChaosPostgres() : null;
  try {
    const options = {
      url: pg?.url ?? null,
      seed,
      ackEarly: !fencing,
      log: (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
    };
    const r = values.scenario === 'batch-kill' ? await runBatchKill(options) : await runHandOffKill(options);
    for (const c of r.checks) {
      process.stdout.write(
        `${c.count === 0 ? 'ok  ' : 'FAIL'} ${c.name}: ${c.invariant} (${c.checked} checked)\n`,
      );
      for (const v of c.violations) {
        process.stdout.write(`     ${v.message}\n${v.window.map((line) => `       ${line}\n`).join('')}`);
      }
      for (const note of c.notes ?? []) process.stdout.write(`     ${note}\n`);
    }
    process.exitCode = r.violations === 0 ? 0 : 1;
  } finally {
    await pg?.stop();
  }
  process.exit();
}
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
