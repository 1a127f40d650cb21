/** The targets of a run, each met, missed or not measured, from the JSON figures (report.ts). */
import { STEADY_AFTER } from './agent-start.js';
import type { FailoverResult } from './failover.js';
import type { Plan } from './report.js';

export interface Target {
  readonly measure: string;
  readonly value: string;
  readonly target: string;
  /** null: not measured in this run. */
  readonly pass: boolean | null;
  /** The per-repetition values behind a ratio's median, as printed; '' where there are none. */
  readonly runs: string;
}

type Figures = Record<string, unknown>;

/** A number at `path` in the figures (NaN when absent or null: not measured). */
function at(figures: Figures, ...path: string[]): number {
  let node: unknown = figures;
  for (const step of path)
    node = typeof node === 'object' && node !== null ? (node as Figures)[step] : undefined;
  return typeof node === 'number' ? node : Number.NaN;
}

/**
 * A ratio with two decimals, or three when two would round it onto a tenth: the targets sit on
 * tenths (≤ 1×, ≥ 0.5×, ≤ 1.1×), and 1.004 shown as "1.00× MISS" against "≤ 1×" reads as a
 * contradiction; "1.004×" says why.
 */
function ratioText(value: number): string {
  const two = value.toFixed(2);
  return two.endsWith('0') && Number(two) !== value ? value.toFixed(3) : two;
}

/** The throughput, latency, scale and failover targets (the bench's first ones). */
function coreTargets(figures: Figures, failover: FailoverResult | null, plan: Plan): Target[] {
  const figure = (key: string): number => at(figures, key);
  const times = (key: string): string => `${ratioText(figure(key))}×`;
  const pct = (key: string): string => `${(figure(key) * 100).toFixed(0)}%`;
  const perRep = (figures.ratioRuns ?? {}) as Readonly<Record<string, readonly number[] | undefined>>;
  const runsX = (key: string): string => (perRep[key] ?? []).map(ratioText).join(', ');
  const runsPct = (key: string): string =>
    (perRep[key] ?? []).map((value) => `${(value * 100).toFixed(0)}%`).join(', ');
  const ratio = (measure: string, key: string, target: string, pass: boolean | null): Target => ({
    measure,
    value: times(key),
    target,
    pass,
    runs: runsX(key),
  });
  return [
    ratio(
      'throughput vs Graphile Worker, defaults (PG)',
      'throughputVsGraphile',
      '≥ 1.5×',
      figure('throughputVsGraphile') >= 1.5,
    ),
    ratio(
      'throughput vs the best peer configuration (PG)',
      'throughputVsGraphileBest',
      '≥ 1.0× (goal 1.5×)',
      figure('throughputVsGraphileBest') >= 1,
    ),
    ratio('throughput vs pg-boss, batch 50 (PG)', 'throughputVsPgBoss', '(no target)', null),
    {
      measure: 'throughput / half the PG durable limit',
      value: pct('fractionOfDurableLimit'),
      target: '≥ 70%',
      pass: figure('fractionOfDurableLimit') >= 0.7,
      runs: runsPct('fractionOfDurableLimit'),
    },
    {
      measure: 'throughput / half the SQLite durable limit',
      value: pct('sqliteFractionOfDurableLimit'),
      target: '≥ 70%',
      pass: figure('sqliteFractionOfDurableLimit') >= 0.7,
      runs: runsPct('sqliteFractionOfDurableLimit'),
    },
    ratio('p50 latency vs Graphile Worker (PG)', 'p50VsGraphile', '≤ 1×', figure('p50VsGraphile') <= 1),
    ratio(
      `claim cost, ${count(plan.scaleLarge)} ÷ ${count(plan.scaleSmall)} queued (PG)`,
      'scaleRatio',
      '≤ 1.2×',
      figure('scaleRatio') <= 1.2,
    ),
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
          runs: failover.runs.map((runMs) => `${Math.round(runMs)} ms`).join(', '),
        },
    ratio("`baton claim` vs `node -e ''` (SQLite)", 'cliVsNode', '≤ 1.5×', figure('cliVsNode') <= 1.5),
    ratio("`baton claim` vs `node -e ''` (PG)", 'cliVsNodePg', '≤ 2.0×', figure('cliVsNodePg') <= 2),
    ratio(
      'claim + release over HTTP vs in process, concurrency 8 (PG)',
      'httpVsDirect',
      '≥ 0.5×',
      figure('httpVsDirect') >= 0.5,
    ),
  ];
}

/** The fleet targets of issue 22: dispatcher ticks, heartbeats and agent start, per engine. */
function fleetTargets(figures: Figures, plan: Plan): Target[] {
  const fleet = `${count(plan.fleet.tiers.at(-1) ?? 0)} hosts × ${plan.fleet.activePerHost} active, ${count(
    plan.fleet.queued,
  )} queued, ${count(plan.fleet.finished)} finished`;
  const list: Target[] = [];
  const upTo = (measure: string, value: number, limit: number, unit: string): Target => ({
    measure,
    value: `${value.toFixed(unit === 'ms' ? 1 : 0)} ${unit}`,
    target: `≤ ${limit} ${unit}`,
    pass: value <= limit,
    runs: '',
  });
  for (const [engine, name] of [
    ['pg', 'PG'],
    ['sqlite', 'SQLite'],
  ] as const) {
    const placing = at(figures, 'dispatchTickMs', 'placing', engine);
    const saturated = at(figures, 'dispatchTickMs', 'saturated', engine);
    list.push(upTo(`placing dispatcher tick, ${fleet} (${name})`, placing, 100, 'ms'));
    list.push(upTo(`saturated dispatcher tick, same fleet (${name})`, saturated, 20, 'ms'));
  }
  const tiers = ['10', '100', '1000'].map((tier) => at(figures, 'dispatchTickMs', 'byHosts', tier));
  const [ten, , thousand] = tiers;
  list.push({
    measure: 'placing tick at 10 / 100 / 1,000 hosts (PG)',
    value: tiers.map((tickMs) => tickMs.toFixed(1)).join(' / ') + ' ms',
    target: 'no faster than linear in hosts',
    pass: ten !== undefined && thousand !== undefined ? thousand <= 100 * ten : null,
    runs: '',
  });
  for (const [engine, name, limit] of [
    ['pg', 'PG', 10_000],
    ['sqlite', 'SQLite', 5_000],
  ] as const) {
    const sessions = at(figures, 'heartbeatSessions', engine);
    list.push({
      measure: `sessions beating every 2 s with p99 < 100 ms (${name})`,
      value: String(sessions),
      target: `≥ ${limit}`,
      pass: sessions >= limit,
      runs: '',
    });
  }
  for (const [engine, name] of [
    ['pg', 'PG'],
    ['sqlite', 'SQLite'],
  ] as const) {
    list.push(
      upTo(
        `agent start p50, enqueue → shell, a \`baton up\` past its ${STEADY_AFTER}th job (${name})`,
        at(figures, 'agentStartMs', engine),
        20,
        'ms',
      ),
    );
  }
  return list;
}

/** Tamper evidence costs at most 10% of throughput, and export runs in constant memory. */
function ledgerTargets(figures: Figures, plan: Plan): Target[] {
  const perRep = (figures.ratioRuns ?? {}) as Readonly<Record<string, readonly number[] | undefined>>;
  const overhead = (engine: string, key: string): Target => ({
    measure: `ledger overhead, ${engine} (throughput off ÷ on)`,
    value: `${ratioText(at(figures, key))}×`,
    target: '≤ 1.1×',
    pass: at(figures, key) <= 1.1,
    runs: (perRep[key] ?? []).map(ratioText).join(', '),
  });
  const memory = (['sqlite', 'postgres'] as const).map((engine): Target => {
    const ratio = at(figures, 'ledgerExport', engine, 'exportRssRatio');
    const peaks = (figures.ledgerExport as Record<string, { exportPeakRssMb?: number[] }> | undefined)?.[
      engine
    ];
    return {
      measure:
        `export peak RSS, ${count(plan.ledgerRowsLarge)} ÷ ${count(plan.ledgerRowsSmall)} ` +
        `ledger rows, ${engine}`,
      value: `${ratioText(ratio)}×`,
      target: '≤ 1.5×',
      pass: ratio <= 1.5,
      runs: (peaks?.exportPeakRssMb ?? []).map((mb) => `${mb} MB`).join(', '),
    };
  });
  return [overhead('PG', 'ledgerOverhead'), overhead('SQLite', 'sqliteLedgerOverhead'), ...memory];
}

export function targets(figures: Figures, failover: FailoverResult | null, plan: Plan): Target[] {
  return [
    ...coreTargets(figures, failover, plan),
    ...ledgerTargets(figures, plan),
    ...fleetTargets(figures, plan),
  ].map((entry) =>
    entry.value.startsWith('NaN') ? { ...entry, value: 'not measured', pass: null, runs: '' } : entry,
  );
}

/** 1000 → 1k, 1000000 → 1M. */
export const count = (value: number): string =>
  value >= 1e6 && value % 1e6 === 0
    ? `${value / 1e6}M`
    : value >= 1e3 && value % 1e3 === 0
      ? `${value / 1e3}k`
      : String(value);

export const verdict = (entry: Target): string => (entry.pass === null ? '—' : entry.pass ? 'pass' : 'MISS');
