/**
 * `npm run bench [-- --quick] [-- --json]`: Baton against Graphile Worker and pg-boss on one
 * PostgreSQL, and Baton on SQLite, in one run on this machine. Progress goes to stderr; a summary
 * to stdout; with --json the last stdout line is one JSON object of the figures. A full run
 * (without --quick) writes docs/benchmarks.md.
 *
 *   --quick         fewer items, shorter windows, smaller queues and fleets (a few minutes), still 3
 *                   repetitions of the ratios, and every key of the JSON
 *   --json          print the figures as one JSON object, last
 *   --only a,b      only these measures (throughput, latency, scale, cli, failover, dispatch,
 *                   heartbeat, agent, ledger, http), for development
 *   --pg-socket dir the http measure reaches PostgreSQL over its Unix socket in dir (both sides);
 *                   the throwaway server's is in /tmp
 */
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { measureCli, type CliResult } from './cli-time.js';
import { measureFailover, type FailoverResult } from './failover.js';
import { measureHttpVsDirect, type HttpVsDirectResult } from './http-vs-direct.js';
import { measureFleet } from './fleet.js';
import { measureLatency, type LatencyRuns } from './latency.js';
import { environment, markdown } from './markdown.js';
import { dropDatabase, freshDatabase, startBenchServer } from './pg-server.js';
import { figures, type Plan, type Results } from './report.js';
import { scalePg, scaleSqlite, type ScaleResult } from './scale.js';
import { nowMs, progress, type Repeated } from './stats.js';
import { targets, verdict } from './targets.js';
import { measureThroughput, noThroughput, onTempFile } from './throughput.js';
import { measureLedgerScale, type LedgerScaleRun } from './ledger-export.js';

const args = process.argv.slice(2);
const flag = (name: string): boolean => args.includes(name);
const option = (name: string): string | undefined => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};
const quick = flag('--quick');
const only = option('--only')?.split(',');
const wanted = (measure: string): boolean => only === undefined || only.includes(measure);

const plan: Plan = {
  n: quick ? 1_000 : 20_000,
  sqliteN: quick ? 500 : 20_000,
  reps: 3,
  durableMs: quick ? 1_000 : 10_000,
  latencySamples: quick ? 20 : 100,
  wakeFallbackMs: 1_000,
  scaleSmall: 1_000,
  // Quick mode keeps its bulk loads small enough for two minutes on a busy 2-core machine.
  scaleLarge: quick ? 250_000 : 1_000_000,
  sqliteScaleLarge: quick ? 100_000 : 1_000_000,
  scaleClaims: quick ? 50 : 200,
  cliRuns: quick ? 10 : 20,
  failoverTtlSeconds: quick ? 3 : null,
  failoverReps: quick ? 1 : 3,
  fleet: {
    tiers: [10, 100, 1_000],
    activePerHost: 8,
    queued: quick ? 10_000 : 100_000,
    finished: quick ? 100_000 : 1_000_000,
    ticks: quick ? 5 : 15,
  },
  heartbeats: quick
    ? { start: 500, max: 16_000, periods: 2, tolerance: 0.25 }
    : { start: 500, max: 32_000, periods: 3, tolerance: 0.1 },
  agentStartSamples: quick ? 8 : 30,
  ledgerRowsSmall: quick ? 20_000 : 100_000,
  ledgerRowsLarge: quick ? 200_000 : 1_000_000,
  httpRoundTrips: quick ? 50 : 400,
};

const skipped: Repeated = { median: Number.NaN, runs: [] };
const skippedScale: ScaleResult = { small: skipped, large: skipped, seedSeconds: Number.NaN };

const started = nowMs();
let lapStart = started;
/** Progress: how long the last step took. */
const lap = (what: string): void => {
  progress(`${what} took ${((nowMs() - lapStart) / 1000).toFixed(0)} s`);
  lapStart = nowMs();
};

const server = await startBenchServer();
try {
  const onPg = async <T>(label: string, work: (url: string) => Promise<T>): Promise<T> => {
    const url = await freshDatabase(server.url, label);
    try {
      return await work(url);
    } finally {
      await dropDatabase(server.url, url);
    }
  };
  const env = await environment(server.url, server.origin);
  progress(`PostgreSQL ${env.postgres} (${server.origin}); plan ${JSON.stringify(plan)}`);
  lap('setup');

  let throughput = noThroughput();
  if (wanted('throughput')) {
    throughput = await measureThroughput(server.url, plan, plan.durableMs);
    lap('throughput and durable limits');
  }

  let latency: LatencyRuns = { batonPg: [], batonSqlite: [], graphile: [] };
  if (wanted('latency')) {
    latency = await measureLatency(onPg, onTempFile, plan.latencySamples, plan.wakeFallbackMs, plan.reps);
    lap('latency');
  }

  const scale = { pg: skippedScale, sqlite: skippedScale };
  if (wanted('scale')) {
    scale.pg = await scalePg(server.url, plan.scaleSmall, plan.scaleLarge, plan.scaleClaims, plan.reps);
    scale.sqlite = await scaleSqlite(plan.scaleSmall, plan.sqliteScaleLarge, plan.scaleClaims, plan.reps);
    const ms = (scaleResult: ScaleResult): string =>
      `${scaleResult.small.median.toFixed(3)} → ${scaleResult.large.median.toFixed(3)}`;
    progress(`scale (ms per claim): PG ${ms(scale.pg)}, SQLite ${ms(scale.sqlite)}`);
    lap('scale');
  }

  const noCli: CliResult = { batonMs: Number.NaN, nodeMs: Number.NaN, batonRuns: [], nodeRuns: [] };
  let cli = noCli;
  let cliPg = noCli;
  if (wanted('cli')) {
    const show = (cliResult: CliResult): string =>
      `${cliResult.batonMs.toFixed(1)} ms (node -e '' ${cliResult.nodeMs.toFixed(1)} ms)`;
    cli = await onTempFile((path) => measureCli(path, plan.cliRuns));
    cliPg = await onPg('cli', (url) => measureCli(url, plan.cliRuns));
    progress(`cli: baton claim on SQLite ${show(cli)}, on PostgreSQL ${show(cliPg)}`);
    lap('cli');
  }

  let failover: FailoverResult | null = null;
  if (wanted('failover')) {
    // Full runs use `baton up`'s default lease TTL; quick runs a 3 s one to stay short.
    failover = await measureFailover(onPg, { ttlSeconds: plan.failoverTtlSeconds, reps: plan.failoverReps });
    progress(`failover: ${failover.failoverMs} ms (TTL ${failover.ttlMs} ms, retry ${failover.retryMs} ms)`);
    lap('failover');
  }

  const fleet = await measureFleet(plan, onPg, onTempFile, wanted, lap);
  const ledger: LedgerScaleRun[] = [];
  if (wanted('ledger')) {
    for (const rows of [plan.ledgerRowsSmall, plan.ledgerRowsLarge]) {
      const large = rows === plan.ledgerRowsLarge;
      ledger.push(await onTempFile((path) => measureLedgerScale('sqlite', path, dirname(path), rows, large)));
      ledger.push(
        await onPg('ledger', (url) =>
          onTempFile((path) => measureLedgerScale('postgres', url, dirname(path), rows, large)),
        ),
      );
    }
    lap('ledger export and verify');
  }

  let httpVsDirect: HttpVsDirectResult | null = null;
  if (wanted('http')) {
    const socket = option('--pg-socket');
    httpVsDirect = await onPg('http', (url) =>
      measureHttpVsDirect(url, plan.httpRoundTrips, plan.reps, socket),
    );
    lap('HTTP against direct');
  }

  const results: Results = {
    quick,
    plan,
    environment: env,
    throughput,
    latency,
    scale,
    cli,
    cliPg,
    failover,
    ...fleet,
    ledger,
    httpVsDirect,
  };
  const measured = figures(results);
  const ts = targets(measured, failover, plan);
  const seconds = (nowMs() - started) / 1000;
  console.log(`Baton bench${quick ? ' (quick)' : ''}: ${seconds.toFixed(0)} s`);
  for (const target of ts) {
    const runs = target.runs === '' ? '' : `; repetitions ${target.runs}`;
    console.log(
      `  ${verdict(target).padEnd(4)}  ${target.measure}: ${target.value} (target ${target.target}${runs})`,
    );
  }
  if (!quick && only === undefined) {
    writeFileSync(
      new URL('../../docs/benchmarks.md', import.meta.url),
      markdown(results, measured, ts, seconds),
    );
    console.log('  wrote docs/benchmarks.md');
  }
  if (flag('--json')) console.log(JSON.stringify(measured));
} finally {
  await server.stop();
}
