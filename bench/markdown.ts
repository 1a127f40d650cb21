/** The machine and versions of a run, and docs/benchmarks.md. */
import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { serverFacts } from './pg-server.js';
import { fleetMethod, fleetSection, peerSection } from './markdown-fleet.js';
import type { Results } from './report.js';
import { fmt, median, runsOf } from './stats.js';
import { count, verdict, type Target } from './targets.js';
import { SEAL_INTERVAL_MS, WARMUP_ROWS } from './ledger-on.js';
import { PG_BATCH_LOOPS, PG_WORKERS, SQLITE_PROCESSES, SQLITE_WORKERS_PER_PROCESS } from './throughput.js';
import { DRAIN_BATCH } from './drain-loop.js';

const require = createRequire(import.meta.url);
const versionOf = (name: string): string => (require(`${name}/package.json`) as { version: string }).version;

export async function environment(pgUrl: string, origin: string): Promise<Record<string, string>> {
  const facts = await serverFacts(pgUrl);
  const db = new Database(':memory:');
  const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  db.close();
  const cpu = cpus();
  return {
    cpu: `${cpu[0]?.model ?? 'unknown'} × ${cpu.length} logical cores`,
    ram: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${type()} ${release()}`,
    loadAtStart: loadNow(),
    node: process.version,
    postgres: facts.server_version ?? '?',
    postgresSettings:
      `fsync=${facts.fsync}, synchronous_commit=${facts.synchronous_commit}, ` +
      `wal_sync_method=${facts.wal_sync_method}, shared_buffers=${facts.shared_buffers}`,
    postgresOrigin: origin,
    sqlite,
    'better-sqlite3': versionOf('better-sqlite3'),
    pg: versionOf('pg'),
    'graphile-worker': versionOf('graphile-worker'),
    'pg-boss': versionOf('pg-boss'),
  };
}

/** The 1, 5 and 15 minute load averages: other work on the machine shows here. */
const loadNow = (): string =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');

/** Rows of the figures table: what, median, the repetitions. */
function figureRows(results: Results, figures: Record<string, unknown>): string[] {
  const plan = results.plan;
  const claim = figures.claimMs as Record<string, { small: number; large: number } | undefined>;
  const line = (what: string, value: number, runs: readonly number[], digits = 0): string =>
    `| ${what} | ${fmt(value, digits)} | ${runsOf(runs, digits)} |`;
  const throughput = results.throughput;
  const rate = (key: string): number => figures[key] as number;
  return [
    line(
      `Baton on PostgreSQL, ${PG_BATCH_LOOPS} batch loops of ${DRAIN_BATCH}, items/s`,
      rate('batonPgItemsPerSec'),
      throughput.batonPg,
    ),
    line(
      `Baton on SQLite, ${SQLITE_PROCESSES} processes × ${SQLITE_WORKERS_PER_PROCESS} workers, items/s`,
      rate('batonSqliteItemsPerSec'),
      throughput.batonSqlite,
    ),
    line(
      'Baton on PostgreSQL, tamper evidence off, items/s',
      rate('batonPgLedgerOffItemsPerSec'),
      throughput.batonPgOff,
    ),
    line(
      'Baton on SQLite, tamper evidence off, items/s',
      rate('batonSqliteLedgerOffItemsPerSec'),
      throughput.batonSqliteOff,
    ),
    line(
      'Ledger rows sealed during a PG drain (sealer at work)',
      median(throughput.pgSealedDuring),
      throughput.pgSealedDuring,
    ),
    line(
      'Ledger rows sealed during a SQLite drain',
      median(throughput.sqliteSealedDuring),
      throughput.sqliteSealedDuring,
    ),
    line(
      `PostgreSQL durable commits/s, ${PG_WORKERS} connections`,
      rate('pgDurableCommitsPerSec'),
      throughput.pgDurable,
    ),
    line(
      `SQLite durable commits/s, ${SQLITE_PROCESSES} processes`,
      rate('sqliteDurableCommitsPerSec'),
      throughput.sqliteDurable,
    ),
    line(
      `PG claimNext ms, ${count(plan.scaleSmall)} queued`,
      claim.pg?.small ?? NaN,
      results.scale.pg.small.runs,
      3,
    ),
    line(
      `PG claimNext ms, ${count(plan.scaleLarge)} queued`,
      claim.pg?.large ?? NaN,
      results.scale.pg.large.runs,
      3,
    ),
    line(
      `SQLite claimNext ms, ${count(plan.scaleSmall)} queued`,
      claim.sqlite?.small ?? NaN,
      results.scale.sqlite.small.runs,
      3,
    ),
    line(
      `SQLite claimNext ms, ${count(plan.sqliteScaleLarge)} queued`,
      claim.sqlite?.large ?? NaN,
      results.scale.sqlite.large.runs,
      3,
    ),
    line('`baton claim` (SQLite) wall ms', results.cli.batonMs, results.cli.batonRuns, 1),
    line("`node -e ''` wall ms (beside it)", results.cli.nodeMs, results.cli.nodeRuns, 1),
    line('`baton claim` (PostgreSQL) wall ms', results.cliPg.batonMs, results.cliPg.batonRuns, 1),
    line("`node -e ''` wall ms (beside it)", results.cliPg.nodeMs, results.cliPg.nodeRuns, 1),
  ];
}

export function markdown(
  results: Results,
  figures: Record<string, unknown>,
  ts: readonly Target[],
  seconds: number,
): string {
  const env = results.environment;
  const plan = results.plan;
  const lat = figures.latencyMs as Record<string, { p50: number; p99: number }>;
  const row = (name: string, latency: { p50: number; p99: number } | undefined): string =>
    `| ${name} | ${fmt(latency?.p50 ?? Number.NaN, 2)} | ${fmt(latency?.p99 ?? Number.NaN, 2)} |`;
  return `# Benchmarks

Written by \`npm run bench\` (full run, ${fmt(seconds)} s). Every figure is the median of ${plan.reps}
repetitions taken in this one run on this one machine; ratios are against peers measured in the same
repetitions. Re-run it on your machine: the ratios are the result, the absolute numbers are this machine's.

## Targets

| measure | this run | target | verdict | repetitions |
|---|---|---|---|---|
${ts.map((entry) => `| ${entry.measure} | ${entry.value} | ${entry.target} | ${verdict(entry)} | ${entry.runs} |`).join('\n')}

${failoverNote(results.failover)}

## Machine and versions

| | |
|---|---|
${Object.entries(env)
  .map(([name, value]) => `| ${name} | ${value} |`)
  .join('\n')}
| loadAtEnd | ${loadNow()} |

A load average above the core count means other processes shared the cores with this run: the
absolute rates then drop and scatter, and only the ratios within a repetition stay comparable.

## Figures

| measure | median | runs |
|---|---|---|
${figureRows(results, figures).join('\n')}

Latency, enqueue → claimed by an idle worker (ms; median over repetitions of each repetition's percentile):

| system | p50 | p99 |
|---|---|---|
${row('Baton on PostgreSQL', lat.batonPg)}
${row('Graphile Worker', lat.graphile)}
${row('Baton on SQLite', lat.batonSqlite)}

${peerSection(results, figures)}

${fleetSection(results)}

${ledgerTable(results)}

## Method

- **One server.** ${env.postgresOrigin}; durable settings (${env.postgresSettings}). Each
  system, each repetition, gets a fresh database on it. Queues are filled before the clock starts (a bulk
  load), then \`VACUUM ANALYZE\` on PostgreSQL (what autovacuum would do) and a \`CHECKPOINT\`, so every
  drain starts as far from the last checkpoint and none lands inside one system's drain only; SQLite is not
  analysed (Baton never analyses it).
- **Throughput.** ${plan.n} no-op items (Baton on SQLite: ${plan.sqliteN}). Baton: ${PG_BATCH_LOOPS} batch loops
  in one process sharing one pool (\`jobs.batch\`, docs/decisions/0017): each takes up to ${DRAIN_BATCH} jobs, runs
  them, then finishes them all and takes the next batch in one commit. Every job is still claimed,
  started and finished under its own epoch guard and lease, with its own ledger rows (two per item:
  claimed and started in one row, finished with its task's move in one row; docs/decisions/0023);
  a fenced member fails alone. The store vacuums the jobs table in the background every 2,000 jobs
  taken (queue upkeep).
  Baton on SQLite: ${SQLITE_PROCESSES} processes × ${SQLITE_WORKERS_PER_PROCESS} workers on one WAL file
  (synchronous=FULL), same loop; the workers of one process share a commit when their calls meet in one
  turn of its event loop. The peers run in every configuration of "Peer configurations" above, each
  on a fresh database, in the same repetition. The clock runs from the
  first item reaching a worker to the last completion committed (for the peers: their job table shows
  none left). One repetition runs every system once, so a slow spell of the machine hits all of them.
- **Durable limit.** PostgreSQL: ${PG_WORKERS} pg connections, each committing
  \`UPDATE … WHERE id = own row\` in autocommit for ${plan.durableMs / 1000} s. SQLite: ${SQLITE_PROCESSES}
  processes, \`BEGIN IMMEDIATE; UPDATE one row; COMMIT\` with Baton's pragmas (WAL, synchronous=FULL,
  busy_timeout 1000). Every item needs at least two durable transitions, so the bound is half the rate.
- **Latency.** ${plan.latencySamples} samples per repetition after 5 warm-up ones, 10-40 ms apart, enqueuer
  and worker in one process on separate connections, timed from just before the enqueue call. Baton's
  idle worker waits on its store's wake-ups (\`store.wakeups\`: LISTEN/NOTIFY on PostgreSQL, a trigger-kept
  counter polled every 2 ms on SQLite), with a ${plan.wakeFallbackMs} ms timeout as its fallback, and says it
  waits (\`claimNext\` with \`waitMs\`), so the enqueue claims the job for it in its own commit and the woken
  worker takes it with a read (hand-off at enqueue, docs/decisions/0024); the clock stops when
  \`claimNext\` has returned the job. Graphile Worker waits on LISTEN/NOTIFY, with its 2 s poll as the
  fallback; its clock stops when the task handler is called.
- **Scale.** Queues of ${count(plan.scaleSmall)} and ${count(plan.scaleLarge)} items (SQLite:
  ${count(plan.sqliteScaleLarge)}) filled by \`INSERT … SELECT generate_series\` (a recursive CTE on SQLite),
  open side by side; ${plan.scaleClaims} \`claimNext\` calls per queue and repetition, alternating between them.
- **Tamper evidence.** Every Baton drain runs twice per repetition, back to back in alternating order:
  on (a ledger key registered and \`baton up\`'s sealer, src/daemon/sealer.ts, in a process of its own
  sealing every ${SEAL_INTERVAL_MS} ms, a quarter of its default interval) and off (no key, no sealer).
  \`ledgerOverhead\` is off ÷ on per repetition, then the median; the targets above are met with it on.
  An "on" drain's time includes the sealer catching up after it (sealing every row it had not sealed
  when the last job finished): a sealer that fell behind would otherwise do that work after the clock
  stopped. The sealer starts warm, as a long-running \`baton up\`'s is: before an "on" drain, untimed,
  ${count(WARMUP_ROWS)} ledger rows shaped as a drain's are written and sealed (so the "on" ledger is that
  much longer than the "off" one), then the PostgreSQL database is vacuumed, analysed and checkpointed
  again. Then, untimed, the whole ledger must verify.
- **Ledger at scale.** ${count(plan.ledgerRowsSmall)} and ${count(plan.ledgerRowsLarge)} ledger rows
  bulk-loaded, sealed, then \`baton audit export --format jsonl\`, \`baton audit verify --file\` and (large
  only) \`baton audit verify\`, each in a process of its own whose peak RSS (getrusage maxrss) is the figure.
- **CLI.** \`node bin/baton.js claim <key> --session S --db <sqlite file>\` as a fresh process against
  \`node -e ''\`, alternating, ${plan.cliRuns} runs each after one untimed run; the same with
  \`--db postgres://…\` on a fresh database of the bench server.
- **HTTP against direct.** ${plan.httpRoundTrips} claim + release round trips per worker, 8 workers: over the
  API of a real \`baton serve\` (an operator token, one keep-alive node:http connection per worker)
  against the same calls on the store in the bench process, alternating, after one untimed
  repetition of each. Per request the server makes one statement, as in process (the token check is
  remembered for 2 s), so the gap is the hop itself: twice the wake-ups per round trip, which on an
  oversubscribed machine wait for a core each, and the ratio falls as the load rises. Where the time
  goes is measured in bench/http-vs-direct.ts's header.
${fleetMethod(results)}

See docs/decisions/0002-bench-findings.md for what the figures say about Baton's engines.
`;
}

/** Peak memory of export and verify at two ledger sizes: flat means constant memory. */
function ledgerTable(results: Results): string {
  if (results.ledger.length === 0) return 'The ledger at scale was not measured in this run.';
  const mb = (value: number | undefined): string => (value === undefined ? '—' : `${fmt(value)} MB`);
  const run = (result: { maxRssMb: number; seconds: number } | null): string =>
    result === null ? '—' : `${mb(result.maxRssMb)} (${fmt(result.seconds, 1)} s)`;
  const rows = results.ledger.map(
    (measured) =>
      `| ${measured.engine} | ${count(measured.rows)} | ${fmt(measured.sealRowsPerSec)} | ${fmt(measured.exportMb)} MB | ` +
      `${run(measured.export)} | ${run(measured.verifyFile)} | ${run(measured.verifyDb)} |`,
  );
  return `The ledger at scale (peak RSS of each command in its own process, and its time):

| engine | rows | sealed rows/s | export size | export | verify --file | verify (database) |
|---|---|---|---|---|---|---|
${rows.join('\n')}`;
}

function failoverNote(failover: Results['failover']): string {
  if (failover === null) return 'Failover was not measured in this run: `failoverMs` and `ttlMs` are null.';
  const runs = failover.runs.map((runMs) => Math.round(runMs)).join(', ');
  return `Failover: two \`baton up\` (hosts a and b) on one PostgreSQL database, lease TTL ${failover.ttlMs} ms,
standby retry interval ${failover.retryMs} ms; from SIGKILL of the leader to the first 'job:placed' audit row
under the next term, on the database clock: ${runs} ms (median ${Math.round(failover.failoverMs)} ms).`;
}
