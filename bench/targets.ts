/** The targets of a run, each met, missed or not measured, from the JSON figures (report.ts). */
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
function at(f: Figures, ...path: string[]): number {
  let v: unknown = f;
  for (const k of path) v = typeof v === 'object' && v !== null ? (v as Figures)[k] : undefined;
  return typeof v === 'number' ? v : Number.NaN;
}

/** The throughput, latency, scale and failover targets (the bench's first ones). */
function coreTargets(f: Figures, failover: FailoverResult | null, plan: Plan): Target[] {
  const n = (k: string): number => at(f, k);
  const x = (k: string): string => `${n(k).toFixed(2)}×`;
  const pct = (k: string): string => `${(n(k) * 100).toFixed(0)}%`;
  const perRep = (f.ratioRuns ?? {}) as Readonly<Record<string, readonly number[] | undefined>>;
  const runsX = (k: string): string => (perRep[k] ?? []).map((v) => v.toFixed(2)).join(', ');
  const runsPct = (k: string): string => (perRep[k] ?? []).map((v) => `${(v * 100).toFixed(0)}%`).join(', ');
  const ratio = (measure: string, k: string, target: string, pass: boolean | null): Target => ({
    measure,
    value: x(k),
    target,
    pass,
    runs: runsX(k),
  });
  return [
    ratio(
      'throughput vs Graphile Worker, defaults (PG)',
      'throughputVsGraphile',
      '≥ 1.5×',
      n('throughputVsGraphile') >= 1.5,
    ),
    ratio(
      'throughput vs the best peer configuration (PG)',
      'throughputVsGraphileBest',
      '≥ 1.0× (goal 1.5×)',
      n('throughputVsGraphileBest') >= 1,
    ),
    ratio('throughput vs pg-boss, batch 50 (PG)', 'throughputVsPgBoss', '(no target)', null),
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
    ratio('p50 latency vs Graphile Worker (PG)', 'p50VsGraphile', '≤ 1×', n('p50VsGraphile') <= 1),
    ratio(
      `claim cost, ${count(plan.scaleLarge)} ÷ ${count(plan.scaleSmall)} queued (PG)`,
      'scaleRatio',
      '≤ 1.2×',
      n('scaleRatio') <= 1.2,
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
          runs: failover.runs.map((v) => `${Math.round(v)} ms`).join(', '),
        },
    ratio("`baton claim` vs `node -e ''` (SQLite)", 'cliVsNode', '≤ 1.5×', n('cliVsNode') <= 1.5),
    ratio("`baton claim` vs `node -e ''` (PG)", 'cliVsNodePg', '≤ 2.0×', n('cliVsNodePg') <= 2),
    ratio(
      'claim + release over HTTP vs in process, concurrency 8 (PG)',
      'httpVsDirect',
      '≥ 0.5×',
      n('httpVsDirect') >= 0.5,
    ),
  ];
}

/** The fleet targets of issue 22: dispatcher ticks, heartbeats and agent start, per engine. */
function fleetTargets(f: Figures, plan: Plan): Target[] {
  const fleet = `${count(plan.fleet.tiers.at(-1) ?? 0)} hosts × ${plan.fleet.activePerHost} active, ${count(
    plan.fleet.queued,
  )} queued, ${count(plan.fleet.finished)} finished`;
  const list: Target[] = [];
  const upTo = (measure: string, v: number, limit: number, unit: string): Target => ({
    measure,
    value: `${v.toFixed(unit === 'ms' ? 1 : 0)} ${unit}`,
    target: `≤ ${limit} ${unit}`,
    pass: v <= limit,
    runs: '',
  });
  for (const [engine, name] of [
    ['pg', 'PG'],
    ['sqlite', 'SQLite'],
  ] as const) {
    const placing = at(f, 'dispatchTickMs', 'placing', engine);
    const saturated = at(f, 'dispatchTickMs', 'saturated', engine);
    list.push(upTo(`placing dispatcher tick, ${fleet} (${name})`, placing, 100, 'ms'));
    list.push(upTo(`saturated dispatcher tick, same fleet (${name})`, saturated, 20, 'ms'));
  }
  const tiers = ['10', '100', '1000'].map((t) => at(f, 'dispatchTickMs', 'byHosts', t));
  const [ten, , thousand] = tiers;
  list.push({
    measure: 'placing tick at 10 / 100 / 1,000 hosts (PG)',
    value: tiers.map((t) => t.toFixed(1)).join(' / ') + ' ms',
    target: 'no faster than linear in hosts',
    pass: ten !== undefined && thousand !== undefined ? thousand <= 100 * ten : null,
    runs: '',
  });
  for (const [engine, name, limit] of [
    ['pg', 'PG', 10_000],
    ['sqlite', 'SQLite', 5_000],
  ] as const) {
    const sessions = at(f, 'heartbeatSessions', engine);
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
    list.push(upTo(`agent start p50, enqueue → shell (${name})`, at(f, 'agentStartMs', engine), 20, 'ms'));
  }
  return list;
}

/** Tamper evidence costs at most 10% of throughput, and export runs in constant memory. */
function ledgerTargets(f: Figures, plan: Plan): Target[] {
  const perRep = (f.ratioRuns ?? {}) as Readonly<Record<string, readonly number[] | undefined>>;
  const overhead = (engine: string, k: string): Target => ({
    measure: `ledger overhead, ${engine} (throughput off ÷ on)`,
    value: `${at(f, k).toFixed(2)}×`,
    target: '≤ 1.1×',
    pass: at(f, k) <= 1.1,
    runs: (perRep[k] ?? []).map((v) => v.toFixed(2)).join(', '),
  });
  const memory = (['sqlite', 'postgres'] as const).map((engine): Target => {
    const ratio = at(f, 'ledgerExport', engine, 'exportRssRatio');
    const peaks = (f.ledgerExport as Record<string, { exportPeakRssMb?: number[] }> | undefined)?.[engine];
    return {
      measure:
        `export peak RSS, ${count(plan.ledgerRowsLarge)} ÷ ${count(plan.ledgerRowsSmall)} ` +
        `ledger rows, ${engine}`,
      value: `${ratio.toFixed(2)}×`,
      target: '≤ 1.5×',
      pass: ratio <= 1.5,
      runs: (peaks?.exportPeakRssMb ?? []).map((mb) => `${mb} MB`).join(', '),
    };
  });
  return [overhead('PG', 'ledgerOverhead'), overhead('SQLite', 'sqliteLedgerOverhead'), ...memory];
}

export function targets(f: Figures, failover: FailoverResult | null, plan: Plan): Target[] {
  return [...coreTargets(f, failover, plan), ...ledgerTargets(f, plan), ...fleetTargets(f, plan)].map((t) =>
    t.value.startsWith('NaN') ? { ...t, value: 'not measured', pass: null, runs: '' } : t,
  );
}

/** 1000 → 1k, 1000000 → 1M. */
export const count = (n: number): string =>
  n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);

export const verdict = (t: Target): string => (t.pass === null ? '—' : t.pass ? 'pass' : 'MISS');
