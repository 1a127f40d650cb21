/**
 * The figures of a run: the JSON object (`--json`); targets.ts judges them, markdown.ts writes
 * docs/benchmarks.md for a full run.
 */
import type { AgentStartResult } from './agent-start.js';
import type { CliResult } from './cli-time.js';
import type { FleetPlan, TickResult } from './dispatch-tick.js';
import type { FailoverResult } from './failover.js';
import type { HttpVsDirectResult } from './http-vs-direct.js';
import type { HeartbeatPlan, HeartbeatResult } from './heartbeats.js';
import type { LatencyRun } from './latency.js';
import { PEERS } from './peers.js';
import type { LedgerScaleRun } from './ledger-export.js';
import type { ScaleResult } from './scale.js';
import { median, round } from './stats.js';
import { bestOfPeers, ratioOfRuns, ratiosOfRuns, type ThroughputRuns } from './throughput.js';

export interface Plan {
  /** Items per drain on PostgreSQL (every system). */
  readonly n: number;
  /** Items per drain of Baton on SQLite (fewer in quick mode: its commits are the slowest here). */
  readonly sqliteN: number;
  readonly reps: number;
  readonly durableMs: number;
  readonly latencySamples: number;
  /** The idle Baton worker's wait timeout, its fallback when no wake-up comes. */
  readonly wakeFallbackMs: number;
  readonly scaleSmall: number;
  readonly scaleLarge: number;
  /** The large SQLite queue (smaller in quick mode: its bulk load is slower). */
  readonly sqliteScaleLarge: number;
  readonly scaleClaims: number;
  readonly cliRuns: number;
  /** Lease TTL for the failover runs; null is `baton up`'s default (quick mode: 3 s). */
  readonly failoverTtlSeconds: number | null;
  readonly failoverReps: number;
  /** The dispatcher tick's fleet (dispatch-tick.ts). */
  readonly fleet: FleetPlan;
  /** The heartbeat search (heartbeats.ts). */
  readonly heartbeats: HeartbeatPlan;
  readonly agentStartSamples: number;
  /** Ledger sizes for the export and verify memory figures (ledger-export.ts). */
  readonly ledgerRowsSmall: number;
  readonly ledgerRowsLarge: number;
  /** Claim + release round trips per worker (8 workers) per side for httpVsDirect. */
  readonly httpRoundTrips: number;
}

/** A measure taken on both engines; null where this run did not take it. */
export interface PerEngine<T> {
  readonly pg: T | null;
  readonly sqlite: T | null;
}

export interface Results {
  readonly quick: boolean;
  readonly plan: Plan;
  readonly environment: Readonly<Record<string, string>>;
  readonly throughput: ThroughputRuns;
  readonly latency: {
    readonly batonPg: readonly LatencyRun[];
    readonly batonSqlite: readonly LatencyRun[];
    readonly graphile: readonly LatencyRun[];
  };
  readonly scale: { readonly pg: ScaleResult; readonly sqlite: ScaleResult };
  readonly cli: CliResult;
  /** `baton claim` on PostgreSQL. */
  readonly cliPg: CliResult;
  readonly failover: FailoverResult | null;
  readonly dispatch: PerEngine<TickResult>;
  readonly heartbeats: PerEngine<HeartbeatResult>;
  readonly agentStart: PerEngine<AgentStartResult>;
  readonly ledger: readonly LedgerScaleRun[];
  /** Claim + release over the HTTP API against the store in process, at concurrency 8 (PG). */
  readonly httpVsDirect: HttpVsDirectResult | null;
}

const p50 = (runs: readonly LatencyRun[]): number => median(runs.map((r) => r.p50));
const p99 = (runs: readonly LatencyRun[]): number => median(runs.map((r) => r.p99));

const orNull = (x: number, digits = 0): number | null => (Number.isFinite(x) ? round(x, digits) : null);
const ms = (x: number | undefined): number | null => orNull(x ?? Number.NaN, 1);

/** The fleet figures of the interface contract (issue 22), null where not measured. */
function fleetFigures(r: Results): Record<string, unknown> {
  const d = r.dispatch;
  const tiers = ['10', '100', '1000'];
  return {
    dispatchTickMs: {
      placing: { sqlite: ms(d.sqlite?.placing), pg: ms(d.pg?.placing) },
      saturated: { sqlite: ms(d.sqlite?.saturated), pg: ms(d.pg?.saturated) },
      byHosts: Object.fromEntries(tiers.map((t) => [t, ms(d.pg?.byHosts[t])])),
    },
    heartbeatSessions: {
      sqlite: r.heartbeats.sqlite?.sessions ?? null,
      pg: r.heartbeats.pg?.sessions ?? null,
    },
    agentStartMs: { sqlite: ms(r.agentStart.sqlite?.p50), pg: ms(r.agentStart.pg?.p50) },
  };
}

/** Raw figures behind the fleet ones: every tick, trial and sample, and the fleet's shape. */
function fleetRaw(r: Results): Record<string, unknown> {
  const f = r.plan.fleet;
  const each = <T, U>(p: PerEngine<T>, pick: (x: T) => U) => ({
    sqlite: p.sqlite === null ? null : pick(p.sqlite),
    pg: p.pg === null ? null : pick(p.pg),
  });
  return {
    fleet: { hosts: f.tiers, activePerHost: f.activePerHost, queued: f.queued, finished: f.finished },
    dispatchTickRuns: each(r.dispatch, (t) =>
      Object.fromEntries(Object.entries(t.runs).map(([k, v]) => [k, v.map((x) => round(x, 1))])),
    ),
    heartbeatTrials: each(r.heartbeats, (h) => h.trials.map((x) => [x.sessions, round(x.p99, 1)])),
    agentStartSamples: each(r.agentStart, (a) => a.samples.map((x) => round(x, 1))),
  };
}

/**
 * The JSON object: the named figures first, then raw figures. Every ratio is the median of
 * per-repetition ratios (per pair of alternated runs for the CLI), so a slow spell of the machine
 * that hits one repetition hits both sides of its ratio.
 */
export function figures(r: Results): Record<string, unknown> {
  const t = r.throughput;
  const pgRate = median(t.batonPg);
  const sqliteRate = median(t.batonSqlite);
  const per = perRepetition(r);
  const med = (k: keyof typeof per): number => round(median(per[k]), 3);
  return {
    throughputVsGraphile: med('throughputVsGraphile'),
    throughputVsPgBoss: med('throughputVsPgBoss'),
    fractionOfDurableLimit: med('fractionOfDurableLimit'),
    sqliteFractionOfDurableLimit: med('sqliteFractionOfDurableLimit'),
    p50VsGraphile: med('p50VsGraphile'),
    scaleRatio: med('scaleRatio'),
    failoverMs: r.failover === null ? null : round(r.failover.failoverMs),
    ttlMs: r.failover === null ? null : r.failover.ttlMs,
    retryMs: r.failover === null ? null : r.failover.retryMs,
    failoverRuns: r.failover === null ? null : r.failover.runs.map((x) => round(x)),
    cliVsNode: round(ratioOfRuns(r.cli.batonRuns, r.cli.nodeRuns), 3),
    throughputVsGraphileBest: med('throughputVsGraphileBest'),
    ...fleetFigures(r),
    cliVsNodePg: orNull(ratioOfRuns(r.cliPg.batonRuns, r.cliPg.nodeRuns), 3),
    httpVsDirect: r.httpVsDirect === null ? null : med('httpVsDirect'),
    httpRoundTripsPerSec: r.httpVsDirect === null ? null : round(median(r.httpVsDirect.http)),
    directRoundTripsPerSec: r.httpVsDirect === null ? null : round(median(r.httpVsDirect.direct)),
    quick: r.quick,
    items: r.plan.n,
    sqliteItems: r.plan.sqliteN,
    repetitions: r.plan.reps,
    batonPgItemsPerSec: round(pgRate),
    batonSqliteItemsPerSec: round(sqliteRate),
    graphileJobsPerSec: round(median(t.peers.graphile ?? [])),
    pgBossJobsPerSec: round(median(t.peers.pgBoss ?? [])),
    peerJobsPerSec: Object.fromEntries(PEERS.map((p) => [p.name, round(median(t.peers[p.name] ?? []))])),
    pgDurableCommitsPerSec: round(median(t.pgDurable)),
    sqliteDurableCommitsPerSec: round(median(t.sqliteDurable)),
    latencyMs: {
      wakeFallbackMs: r.plan.wakeFallbackMs,
      batonPg: { p50: round(p50(r.latency.batonPg), 2), p99: round(p99(r.latency.batonPg), 2) },
      batonSqlite: { p50: round(p50(r.latency.batonSqlite), 2), p99: round(p99(r.latency.batonSqlite), 2) },
      graphile: { p50: round(p50(r.latency.graphile), 2), p99: round(p99(r.latency.graphile), 2) },
    },
    claimMs: {
      pg: { small: round(r.scale.pg.small.median, 3), large: round(r.scale.pg.large.median, 3) },
      sqlite: { small: round(r.scale.sqlite.small.median, 3), large: round(r.scale.sqlite.large.median, 3) },
      smallQueued: r.plan.scaleSmall,
      largeQueued: r.plan.scaleLarge,
      sqliteLargeQueued: r.plan.sqliteScaleLarge,
    },
    sqliteScaleRatio: med('sqliteScaleRatio'),
    ledgerOverhead: med('ledgerOverhead'),
    sqliteLedgerOverhead: med('sqliteLedgerOverhead'),
    batonPgLedgerOffItemsPerSec: round(median(t.batonPgOff)),
    batonSqliteLedgerOffItemsPerSec: round(median(t.batonSqliteOff)),
    rowsSealedDuringDrain: { pg: t.pgSealedDuring, sqlite: t.sqliteSealedDuring },
    ledgerExport: ledgerFigures(r),
    cliMs: { baton: round(r.cli.batonMs, 1), node: round(r.cli.nodeMs, 1) },
    cliPgMs: { baton: round(r.cliPg.batonMs, 1), node: round(r.cliPg.nodeMs, 1) },
    ...fleetRaw(r),
    // Each ratio's repetitions, whose median the figure above is: how far one repetition swings.
    ratioRuns: Object.fromEntries(Object.entries(per).map(([k, v]) => [k, v.map((x) => round(x, 3))])),
  };
}

/** Each ratio per repetition, system against system (or against the limit) within that repetition. */
function perRepetition(r: Results) {
  const t = r.throughput;
  return {
    throughputVsGraphile: ratiosOfRuns(t.batonPg, t.peers.graphile ?? []),
    throughputVsPgBoss: ratiosOfRuns(t.batonPg, t.peers.pgBoss ?? []),
    httpVsDirect: ratiosOfRuns(r.httpVsDirect?.http ?? [], r.httpVsDirect?.direct ?? []),
    // Against the fastest peer configuration of the same repetition, whichever it was.
    throughputVsGraphileBest: ratiosOfRuns(
      t.batonPg,
      bestOfPeers(
        t,
        PEERS.map((p) => p.name),
      ),
    ),
    // Per repetition, the drain against the durable limit measured just before it; then the median.
    fractionOfDurableLimit: ratiosOfRuns(
      t.batonPg,
      t.pgDurable.map((x) => x / 2),
    ),
    sqliteFractionOfDurableLimit: ratiosOfRuns(
      t.batonSqlite,
      t.sqliteDurable.map((x) => x / 2),
    ),
    p50VsGraphile: ratiosOfRuns(
      r.latency.batonPg.map((x) => x.p50),
      r.latency.graphile.map((x) => x.p50),
    ),
    scaleRatio: ratiosOfRuns(r.scale.pg.large.runs, r.scale.pg.small.runs),
    sqliteScaleRatio: ratiosOfRuns(r.scale.sqlite.large.runs, r.scale.sqlite.small.runs),
    // Tamper evidence's cost: throughput with it off ÷ with it on, per repetition.
    ledgerOverhead: ratiosOfRuns(t.batonPgOff, t.batonPg),
    sqliteLedgerOverhead: ratiosOfRuns(t.batonSqliteOff, t.batonSqlite),
  };
}

/** Per engine: peak RSS of export and verify at both sizes, and large ÷ small (flat = constant memory). */
function ledgerFigures(r: Results): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const engine of ['sqlite', 'postgres'] as const) {
    const small = r.ledger.find((x) => x.engine === engine && x.rows === r.plan.ledgerRowsSmall);
    const large = r.ledger.find((x) => x.engine === engine && x.rows === r.plan.ledgerRowsLarge);
    if (small === undefined || large === undefined) continue;
    out[engine] = {
      rows: [small.rows, large.rows],
      exportMb: round(large.exportMb, 1),
      sealRowsPerSec: round(large.sealRowsPerSec),
      exportPeakRssMb: [round(small.export.maxRssMb), round(large.export.maxRssMb)],
      verifyFilePeakRssMb: [round(small.verifyFile.maxRssMb), round(large.verifyFile.maxRssMb)],
      verifyDbPeakRssMb: large.verifyDb === null ? null : round(large.verifyDb.maxRssMb),
      exportSeconds: round(large.export.seconds, 1),
      verifyFileSeconds: round(large.verifyFile.seconds, 1),
      verifyDbSeconds: large.verifyDb === null ? null : round(large.verifyDb.seconds, 1),
      exportRssRatio: round(large.export.maxRssMb / small.export.maxRssMb, 3),
      verifyRssRatio: round(large.verifyFile.maxRssMb / small.verifyFile.maxRssMb, 3),
    };
  }
  return out;
}
