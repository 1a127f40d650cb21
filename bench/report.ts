/**
 * The figures of a run: the JSON object (`--json`), the targets with pass or miss, and
 * docs/benchmarks.md for a full run.
 */
import type { CliResult } from './cli-time.js';
import type { FailoverResult } from './failover.js';
import type { LatencyRun } from './latency.js';
import type { ScaleResult } from './scale.js';
import { median, round } from './stats.js';
import { ratioOfRuns, ratiosOfRuns, type ThroughputRuns } from './throughput.js';

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
  readonly failover: FailoverResult | null;
}

const p50 = (runs: readonly LatencyRun[]): number => median(runs.map((r) => r.p50));
const p99 = (runs: readonly LatencyRun[]): number => median(runs.map((r) => r.p99));

/**
 * The JSON object: the nine named figures first, then raw figures. Every ratio is the median of
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
    quick: r.quick,
    items: r.plan.n,
    sqliteItems: r.plan.sqliteN,
    repetitions: r.plan.reps,
    batonPgItemsPerSec: round(pgRate),
    batonSqliteItemsPerSec: round(sqliteRate),
    graphileJobsPerSec: round(median(t.graphile)),
    pgBossJobsPerSec: round(median(t.pgBoss)),
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
    cliMs: { baton: round(r.cli.batonMs, 1), node: round(r.cli.nodeMs, 1) },
    // Each ratio's repetitions, whose median the figure above is: how far one repetition swings.
    ratioRuns: Object.fromEntries(Object.entries(per).map(([k, v]) => [k, v.map((x) => round(x, 3))])),
  };
}

/** Each ratio per repetition, system against system (or against the limit) within that repetition. */
function perRepetition(r: Results) {
  const t = r.throughput;
  return {
    throughputVsGraphile: ratiosOfRuns(t.batonPg, t.graphile),
    throughputVsPgBoss: ratiosOfRuns(t.batonPg, t.pgBoss),
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
  };
}

export interface Target {
  readonly measure: string;
  readonly value: string;
  readonly target: string;
  /** null: not measured in this run. */
  readonly pass: boolean | null;
  /** The per-repetition values behind a ratio's median, as printed; '' where there are none. */
  readonly runs: string;
}

export function targets(f: Record<string, unknown>, failover: FailoverResult | null, plan: Plan): Target[] {
  // A figure this run did not measure is null in the JSON; its target is then neither met nor missed.
  const n = (k: string): number => (typeof f[k] === 'number' ? f[k] : Number.NaN);
  const x = (k: string): string => `${n(k).toFixed(2)}×`;
  const pct = (k: string): string => `${(n(k) * 100).toFixed(0)}%`;
  const perRep = (f.ratioRuns ?? {}) as Readonly<Record<string, readonly number[] | undefined>>;
  const runsX = (k: string): string => (perRep[k] ?? []).map((v) => v.toFixed(2)).join(', ');
  const runsPct = (k: string): string => (perRep[k] ?? []).map((v) => `${(v * 100).toFixed(0)}%`).join(', ');
  const list: Target[] = [
    {
      measure: 'throughput vs Graphile Worker (PG)',
      value: x('throughputVsGraphile'),
      target: '≥ 1.5×',
      pass: n('throughputVsGraphile') >= 1.5,
      runs: runsX('throughputVsGraphile'),
    },
    {
      measure: 'throughput vs pg-boss (PG)',
      value: x('throughputVsPgBoss'),
      target: '(no target)',
      pass: null,
      runs: runsX('throughputVsPgBoss'),
    },
    {
      measure: 'throughput / half the PG durable limit',
      value: pct('fractionOfDurableLimit'),
      target: '≥ 70%',
      pass: n('fractionOfDurableLimit') >= 0.7,
      runs: runsPct('fractionOfDurableLimit'),
    },
    {
      measure: 'throughput / half the SQLite durable limit',
      value: pct('sqliteFractionOfDurableLimit'),
      target: '≥ 70%',
      pass: n('sqliteFractionOfDurableLimit') >= 0.7,
      runs: runsPct('sqliteFractionOfDurableLimit'),
    },
    {
      measure: 'p50 latency vs Graphile Worker (PG)',
      value: x('p50VsGraphile'),
      target: '≤ 1×',
      pass: n('p50VsGraphile') <= 1,
      runs: runsX('p50VsGraphile'),
    },
    {
      measure: `claim cost, ${count(plan.scaleLarge)} ÷ ${count(plan.scaleSmall)} queued (PG)`,
      value: x('scaleRatio'),
      target: '≤ 1.2×',
      pass: n('scaleRatio') <= 1.2,
      runs: runsX('scaleRatio'),
    },
    failover === null
      ? {
          measure: 'failover (SIGKILL → first dispatch)',
          value: 'not measured',
          target: '≤ TTL + one retry',
          pass: null,
          runs: '',
        }
      : {
          measure: 'failover (SIGKILL → first dispatch)',
          value: `${Math.round(failover.failoverMs)} ms`,
          target: `≤ ${failover.ttlMs + failover.retryMs} ms`,
          pass: failover.failoverMs <= failover.ttlMs + failover.retryMs,
          runs: failover.runs.map((v) => `${Math.round(v)} ms`).join(', '),
        },
    {
      measure: "`baton claim` vs `node -e ''`",
      value: x('cliVsNode'),
      target: '≤ 3×',
      pass: n('cliVsNode') <= 3,
      runs: '',
    },
  ];
  return list.map((t) =>
    t.value.startsWith('NaN') ? { ...t, value: 'not measured', pass: null, runs: '' } : t,
  );
}

/** 1000 → 1k, 1000000 → 1M. */
export const count = (n: number): string =>
  n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);

export const verdict = (t: Target): string => (t.pass === null ? '—' : t.pass ? 'pass' : 'MISS');
