/** The machine and versions of a run, and docs/benchmarks.md. */
import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { serverFacts } from './pg-server.js';
import { fleetMethod, fleetSection, peerSection } from './markdown-fleet.js';
import type { Results } from './report.js';
import { fmt, median, runsOf } from './stats.js';
import { count, verdict, type Target } from './targets.js';
import { SEAL_INTERVAL_MS } from './ledger-on.js';
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
    .map((x) => x.toFixed(1))
    .join(' / ');

/** Rows of the figures table: what, median, the repetitions. */
function figureRows(r: Results, f: Record<string, unknown>): string[] {
  const p = r.plan;
  const claim = f.claimMs as Record<string, { small: number; large: number } | undefined>;
  const line = (what: string, value: number, runs: readonly number[], digits = 0): string =>
    `| ${what} | ${fmt(value, digits)} | ${runsOf(runs, digits)} |`;
  const t = r.throughput;
  const rate = (k: string): number => f[k] as number;
  return [
    line(
      `Baton on PostgreSQL, ${PG_BATCH_LOOPS} batch loops of ${DRAIN_BATCH}, items/s`,
      rate('batonPgItemsPerSec'),
      t.batonPg,
    ),
    line(
      `Baton on SQLite, ${SQLITE_PROCESSES} processes × ${SQLITE_WORKERS_PER_PROCESS} workers, items/s`,
      rate('batonSqliteItemsPerSec'),
      t.batonSqlite,
    ),
    line(
      'Baton on PostgreSQL, tamper evidence off, items/s',
      rate('batonPgLedgerOffItemsPerSec'),
      t.batonPgOff,
    ),
    line(
      'Baton on SQLite, tamper evidence off, items/s',
      rate('batonSqliteLedgerOffItemsPerSec'),
      t.batonSqliteOff,
    ),
    line('Ledger rows sealed during a PG drain (sealer at work)', median(t.pgSealedDuring), t.pgSealedDuring),
    line('Ledger rows sealed during a SQLite drain', median(t.sqliteSealedDuring), t.sqliteSealedDuring),
    line(
      `PostgreSQL durable commits/s, ${PG_WORKERS} connections`,
      rate('pgDurableCommitsPerSec'),
      t.pgDurable,
    ),
    line(
      `SQLite durable commits/s, ${SQLITE_PROCESSES} processes`,
      rate('sqliteDurableCommitsPerSec'),
      t.sqliteDurable,
    ),
    line(`PG claimNext ms, ${count(p.scaleSmall)} queued`, claim.pg?.small ?? NaN, r.scale.pg.small.runs, 3),
    line(`PG claimNext ms, ${count(p.scaleLarge)} queued`, claim.pg?.large ?? NaN, r.scale.pg.large.runs, 3),
    line(
      `SQLite claimNext ms, ${count(p.scaleSmall)} queued`,
      claim.sqlite?.small ?? NaN,
      r.scale.sqlite.small.runs,
      3,
    ),
    line(
      `SQLite claimNext ms, ${count(p.sqliteScaleLarge)} queued`,
      claim.sqlite?.large ?? NaN,
      r.scale.sqlite.large.runs,
      3,
    ),
    line('`baton claim` (SQLite) wall ms', r.cli.batonMs, r.cli.batonRuns, 1),
    line("`node -e ''` wall ms (beside it)", r.cli.nodeMs, r.cli.nodeRuns, 1),
    line('`baton claim` (PostgreSQL) wall ms', r.cliPg.batonMs, r.cliPg.batonRuns, 1),
    line("`node -e ''` wall ms (beside it)", r.cliPg.nodeMs, r.cliPg.nodeRuns, 1),
  ];
}

export function markdown(
  r: Results,
  f: Record<string, unknown>,
  ts: readonly Target[],
  seconds: number,
): string {
  const e = r.environment;
  const p = r.plan;
  const lat = f.latencyMs as Record<string, { p50: number; p99: number }>;
  const row = (name: string, v: { p50: number; p99: number } | undefined): string =>
    `| ${name} | ${fmt(v?.p50 ?? Number.NaN, 2)} | ${fmt(v?.p99 ?? Number.NaN, 2)} |`;
  return `# Benchmarks

Written by \`npm run bench\` (full run, ${fmt(seconds)} s). Every figure is the median of ${p.reps}
repetitions taken in this one run on this one machine; ratios are against peers measured in the same
repetitions. Re-run it on your machine: the ratios are the result, the absolute numbers are this machine's.

## Targets

| measure | this run | target | verdict | repetitions |
|---|---|---|---|---|
${ts.map((t) => `| ${t.measure} | ${t.value} | ${t.target} | ${verdict(t)} | ${t.runs} |`).join('\n')}

${failoverNote(r.failover)}

## Machine and versions

| | |
|---|---|
${Object.entries(e)
  .map(([k, v]) => `| ${k} | ${v} |`)
  .join('\n')}
| loadAtEnd | ${loadNow()} |

A load average above the core count means other processes shared the cores with this run: the
absolute rates then drop and scatter, and only the ratios within a repetition stay comparable.

## Figures

| measure | median | runs |
|---|---|---|
${figureRows(r, f).join('\n')}

Latency, enqueue → claimed by an idle worker (ms; median over repetitions of each repetition's percentile):

| system | p50 | p99 |
|---|---|---|
${row('Baton on PostgreSQL', lat.batonPg)}
${row('Graphile Worker', lat.graphile)}
${row('Baton on SQLite', lat.batonSqlite)}

${peerSection(r, f)}

${fleetSection(r)}

${ledgerTable(r)}

## Method

- **One server.** ${e.postgresOrigin}; durable settings (${e.postgresSettings}). Each
  system, each repetition, gets a fresh database on it. Queues are filled before the clock starts (a bulk
  load), then \`VACUUM ANALYZE\` on PostgreSQL (what autovacuum would do) and a \`CHECKPOINT\`, so every
  drain starts as far from the last checkpoint and none lands inside one system's drain only; SQLite is not
  analysed (Baton never analyses it).
- **Throughput.** ${p.n} no-op items (Baton on SQLite: ${p.sqliteN}). Baton: ${PG_BATCH_LOOPS} batch loops
  in one process sharing one pool (\`jobs.batch\`, docs/decisions/0017): each takes up to ${DRAIN_BATCH} jobs, runs
  them, then finishes them all and takes the next batch in one commit. Every job is still claimed,
  started and finished under its own epoch guard and lease, with its own ledger rows (four per item:
  claimed, started, finished, and its task's state); a fenced member fails alone. The store
  vacuums the jobs table in the background every 2,000 jobs taken (queue upkeep).
  Baton on SQLite: ${SQLITE_PROCESSES} processes × ${SQLITE_WORKERS_PER_PROCESS} workers on one WAL file
  (synchronous=FULL), same loop; the workers of one process share a commit when their calls meet in one
  turn of its event loop. The peers run in every configuration of "Peer configurations" above, each
  on a fresh database, in the same repetition. The clock runs from the
  first item reaching a worker to the last completion committed (for the peers: their job table shows
  none left). One repetition runs every system once, so a slow spell of the machine hits all of them.
- **Durable limit.** PostgreSQL: ${PG_WORKERS} pg connections, each committing
  \`UPDATE … WHERE id = own row\` in autocommit for ${p.durableMs / 1000} s. SQLite: ${SQLITE_PROCESSES}
  processes, \`BEGIN IMMEDIATE; UPDATE one row; COMMIT\` with Baton's pragmas (WAL, synchronous=FULL,
  busy_timeout 1000). Every item needs at least two durable transitions, so the bound is half the rate.
- **Latency.** ${p.latencySamples} samples per repetition after 5 warm-up ones, 10-40 ms apart, enqueuer
  and worker in one process on separate connections, timed from just before the enqueue call. Baton's
  idle worker waits on its store's wake-ups (\`store.wakeups\`: LISTEN/NOTIFY on PostgreSQL, a trigger-kept
  counter polled every 2 ms on SQLite), with a ${p.wakeFallbackMs} ms timeout as its fallback. Graphile
  Worker waits on LISTEN/NOTIFY, with its 2 s poll as the fallback.
- **Scale.** Queues of ${count(p.scaleSmall)} and ${count(p.scaleLarge)} items (SQLite:
  ${count(p.sqliteScaleLarge)}) filled by \`INSERT … SELECT generate_series\` (a recursive CTE on SQLite),
  open side by side; ${p.scaleClaims} \`claimNext\` calls per queue and repetition, alternating between them.
- **Tamper evidence.** Every Baton drain runs twice per repetition, back to back in alternating order:
  on (a ledger key registered and \`baton up\`'s sealer, src/daemon/sealer.ts, in a process of its own
  sealing every ${SEAL_INTERVAL_MS} ms, a quarter of its default interval) and off (no key, no sealer).
  \`ledgerOverhead\` is off ÷ on per repetition, then the median; the targets above are met with it on.
  After each "on" drain, untimed, the last rows are sealed and the whole ledger must verify.
- **Ledger at scale.** ${count(p.ledgerRowsSmall)} and ${count(p.ledgerRowsLarge)} ledger rows
  bulk-loaded, sealed, then \`baton audit export --format jsonl\`, \`baton audit verify --file\` and (large
  only) \`baton audit verify\`, each in a process of its own whose peak RSS (getrusage maxrss) is the figure.
- **CLI.** \`node bin/baton.js claim <key> --session S --db <sqlite file>\` as a fresh process against
  \`node -e ''\`, alternating, ${p.cliRuns} runs each after one untimed run; the same with
  \`--db postgres://…\` on a fresh database of the bench server.
${fleetMethod(r)}

See docs/decisions/0002-bench-findings.md for what the figures say about Baton's engines.
`;
}

/** Peak memory of export and verify at two ledger sizes: flat means constant memory. */
function ledgerTable(r: Results): string {
  if (r.ledger.length === 0) return 'The ledger at scale was not measured in this run.';
  const mb = (x: number | undefined): string => (x === undefined ? '—' : `${fmt(x)} MB`);
  const run = (c: { maxRssMb: number; seconds: number } | null): string =>
    c === null ? '—' : `${mb(c.maxRssMb)} (${fmt(c.seconds, 1)} s)`;
  const rows = r.ledger.map(
    (x) =>
      `| ${x.engine} | ${count(x.rows)} | ${fmt(x.sealRowsPerSec)} | ${fmt(x.exportMb)} MB | ` +
      `${run(x.export)} | ${run(x.verifyFile)} | ${run(x.verifyDb)} |`,
  );
  return `The ledger at scale (peak RSS of each command in its own process, and its time):

| engine | rows | sealed rows/s | export size | export | verify --file | verify (database) |
|---|---|---|---|---|---|---|
${rows.join('\n')}`;
}

function failoverNote(f: Results['failover']): string {
  if (f === null) return 'Failover was not measured in this run: `failoverMs` and `ttlMs` are null.';
  const runs = f.runs.map((x) => Math.round(x)).join(', ');
  return `Failover: two \`baton up\` (hosts a and b) on one PostgreSQL database, lease TTL ${f.ttlMs} ms,
standby retry interval ${f.retryMs} ms; from SIGKILL of the leader to the first 'job:placed' audit row
under the next term, on the database clock: ${runs} ms (median ${Math.round(f.failoverMs)} ms).`;
}
