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

const p50 = (runs: readonly LatencyRun[]): number => median(runs.map((run) => run.p50));
const p99 = (runs: readonly LatencyRun[]): number => median(runs.map((run) => run.p99));

const orNull = (value: number, digits = 0): number | null =>
  Number.isFinite(value) ? round(value, digits) : null;
const ms = (value: number | undefined): number | null => orNull(value ?? Number.NaN, 1);

/**
 * The fleet figures of the interface contract (issue 22), and beside them agentStartColdMs
 * (reported, no target), null where not measured.
 */
function fleetFigures(results: Results): Record<string, unknown> {
  const dispatch = results.dispatch;
  const tiers = ['10', '100', '1000'];
  return {
    dispatchTickMs: {
      placing: { sqlite: ms(dispatch.sqlite?.placing), pg: ms(dispatch.pg?.placing) },
      saturated: { sqlite: ms(dispatch.sqlite?.saturated), pg: ms(dispatch.pg?.saturated) },
      byHosts: Object.fromEntries(tiers.map((tier) => [tier, ms(dispatch.pg?.byHosts[tier])])),
    },
    heartbeatSessions: {
      sqlite: results.heartbeats.sqlite?.sessions ?? null,
      pg: results.heartbeats.pg?.sessions ?? null,
    },
    agentStartMs: { sqlite: ms(results.agentStart.sqlite?.p50), pg: ms(results.agentStart.pg?.p50) },
    // The same just after `baton up` started (bench/agent-start.ts): reported, no target.
    agentStartColdMs: {
      sqlite: ms(results.agentStart.sqlite?.coldP50),
      pg: ms(results.agentStart.pg?.coldP50),
    },
  };
}

/** Raw figures behind the fleet ones: every tick, trial and sample, and the fleet's shape. */
function fleetRaw(results: Results): Record<string, unknown> {
  const fleet = results.plan.fleet;
  const each = <T, U>(values: PerEngine<T>, pick: (x: T) => U) => ({
    sqlite: values.sqlite === null ? null : pick(values.sqlite),
    pg: values.pg === null ? null : pick(values.pg),
  });
  return {
    fleet: {
      hosts: fleet.tiers,
      activePerHost: fleet.activePerHost,
      queued: fleet.queued,
      finished: fleet.finished,
    },
    dispatchTickRuns: each(results.dispatch, (dispatch) =>
      Object.fromEntries(
        Object.entries(dispatch.runs).map(([name, samples]) => [
          name,
          samples.map((tickMs) => round(tickMs, 1)),
        ]),
      ),
    ),
    heartbeatTrials: each(results.heartbeats, (beats) =>
      beats.trials.map((trial) => [trial.sessions, round(trial.p99, 1)]),
    ),
    agentStartSamples: each(results.agentStart, (start) =>
      start.samples.map((sampleMs) => round(sampleMs, 1)),
    ),
    agentStartColdSamples: each(results.agentStart, (start) =>
      start.coldSamples.map((sampleMs) => round(sampleMs, 1)),
    ),
  };
}

/**
 * The JSON object: the named figures first, then raw figures. Every ratio is the median of
 * per-repetition ratios (per pair of alternated runs for the CLI), so a slow spell of the machine
 * that hits one repetition hits both sides of its ratio.
 */
export function figures(results: Results): Record<string, unknown> {
  const throughput = results.throughput;
  const pgRate = median(throughput.batonPg);
  const sqliteRate = median(throughput.batonSqlite);
  const per = perRepetition(results);
  const med = (key: keyof typeof per): number => round(median(per[key]), 3);
  return {
    throughputVsGraphile: med('throughputVsGraphile'),
    throughputVsPgBoss: med('throughputVsPgBoss'),
    fractionOfDurableLimit: med('fractionOfDurableLimit'),
    sqliteFractionOfDurableLimit: med('sqliteFractionOfDurableLimit'),
    p50VsGraphile: med('p50VsGraphile'),
    scaleRatio: med('scaleRatio'),
    failoverMs: results.failover === null ? null : round(results.failover.failoverMs),
    ttlMs: results.failover === null ? null : results.failover.ttlMs,
    retryMs: results.failover === null ? null : results.failover.retryMs,
    failoverRuns: results.failover === null ? null : results.failover.runs.map((runMs) => round(runMs)),
    cliVsNode: round(ratioOfRuns(results.cli.batonRuns, results.cli.nodeRuns), 3),
    throughputVsGraphileBest: med('throughputVsGraphileBest'),
    ...fleetFigures(results),
    cliVsNodePg: orNull(ratioOfRuns(results.cliPg.batonRuns, results.cliPg.nodeRuns), 3),
    httpVsDirect: results.httpVsDirect === null ? null : med('httpVsDirect'),
    httpRoundTripsPerSec: results.httpVsDirect === null ? null : round(median(results.httpVsDirect.http)),
    directRoundTripsPerSec: results.httpVsDirect === null ? null : round(median(results.httpVsDirect.direct)),
    quick: results.quick,
    items: results.plan.n,
    sqliteItems: results.plan.sqliteN,
    repetitions: results.plan.reps,
    batonPgItemsPerSec: round(pgRate),
    batonSqliteItemsPerSec: round(sqliteRate),
    graphileJobsPerSec: round(median(throughput.peers.graphile ?? [])),
    pgBossJobsPerSec: round(median(throughput.peers.pgBoss ?? [])),
    peerJobsPerSec: Object.fromEntries(
      PEERS.map((peer) => [peer.name, round(median(throughput.peers[peer.name] ?? []))]),
    ),
    pgDurableCommitsPerSec: round(median(throughput.pgDurable)),
    sqliteDurableCommitsPerSec: round(median(throughput.sqliteDurable)),
    latencyMs: {
      wakeFallbackMs: results.plan.wakeFallbackMs,
      batonPg: { p50: round(p50(results.latency.batonPg), 2), p99: round(p99(results.latency.batonPg), 2) },
      batonSqlite: {
        p50: round(p50(results.latency.batonSqlite), 2),
        p99: round(p99(results.latency.batonSqlite), 2),
      },
      graphile: {
        p50: round(p50(results.latency.graphile), 2),
        p99: round(p99(results.latency.graphile), 2),
      },
    },
    claimMs: {
      pg: { small: round(results.scale.pg.small.median, 3), large: round(results.scale.pg.large.median, 3) },
      sqlite: {
        small: round(results.scale.sqlite.small.median, 3),
        large: round(results.scale.sqlite.large.median, 3),
      },
      smallQueued: results.plan.scaleSmall,
      largeQueued: results.plan.scaleLarge,
      sqliteLargeQueued: results.plan.sqliteScaleLarge,
    },
    sqliteScaleRatio: med('sqliteScaleRatio'),
    ledgerOverhead: med('ledgerOverhead'),
    sqliteLedgerOverhead: med('sqliteLedgerOverhead'),
    batonPgLedgerOffItemsPerSec: round(median(throughput.batonPgOff)),
    batonSqliteLedgerOffItemsPerSec: round(median(throughput.batonSqliteOff)),
    rowsSealedDuringDrain: { pg: throughput.pgSealedDuring, sqlite: throughput.sqliteSealedDuring },
    ledgerExport: ledgerFigures(results),
    cliMs: { baton: round(results.cli.batonMs, 1), node: round(results.cli.nodeMs, 1) },
    cliPgMs: { baton: round(results.cliPg.batonMs, 1), node: round(results.cliPg.nodeMs, 1) },
    ...fleetRaw(results),
    // Each ratio's repetitions, whose median the figure above is: how far one repetition swings.
    ratioRuns: Object.fromEntries(
      Object.entries(per).map(([name, ratios]) => [name, ratios.map((ratio) => round(ratio, 3))]),
    ),
  };
}

/** Each ratio per repetition, system against system (or against the limit) within that repetition. */
function perRepetition(results: Results) {
  const throughput = results.throughput;
  return {
    throughputVsGraphile: ratiosOfRuns(throughput.batonPg, throughput.peers.graphile ?? []),
    throughputVsPgBoss: ratiosOfRuns(throughput.batonPg, throughput.peers.pgBoss ?? []),
    httpVsDirect: ratiosOfRuns(results.httpVsDirect?.http ?? [], results.httpVsDirect?.direct ?? []),
    // Against the fastest peer configuration of the same repetition, whichever it was.
    throughputVsGraphileBest: ratiosOfRuns(
      throughput.batonPg,
      bestOfPeers(
        throughput,
        PEERS.map((peer) => peer.name),
      ),
    ),
    // Per repetition, the drain against the durable limit measured just before it; then the median.
    fractionOfDurableLimit: ratiosOfRuns(
      throughput.batonPg,
      throughput.pgDurable.map((commits) => commits / 2),
    ),
    sqliteFractionOfDurableLimit: ratiosOfRuns(
      throughput.batonSqlite,
      throughput.sqliteDurable.map((commits) => commits / 2),
    ),
    p50VsGraphile: ratiosOfRuns(
      results.latency.batonPg.map((run) => run.p50),
      results.latency.graphile.map((run) => run.p50),
    ),
    scaleRatio: ratiosOfRuns(results.scale.pg.large.runs, results.scale.pg.small.runs),
    sqliteScaleRatio: ratiosOfRuns(results.scale.sqlite.large.runs, results.scale.sqlite.small.runs),
    // Tamper evidence's cost: throughput with it off ÷ with it on, per repetition.
    ledgerOverhead: ratiosOfRuns(throughput.batonPgOff, throughput.batonPg),
    sqliteLedgerOverhead: ratiosOfRuns(throughput.batonSqliteOff, throughput.batonSqlite),
  };
}

/** Per engine: peak RSS of export and verify at both sizes, and large ÷ small (flat = constant memory). */
function ledgerFigures(results: Results): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const engine of ['sqlite', 'postgres'] as const) {
    const small = results.ledger.find(
      (run) => run.engine === engine && run.rows === results.plan.ledgerRowsSmall,
    );
    const large = results.ledger.find(
      (run) => run.engine === engine && run.rows === results.plan.ledgerRowsLarge,
    );
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
