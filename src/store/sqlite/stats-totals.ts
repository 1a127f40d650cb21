/**
 * stats()' running counts on SQLite (prefix-totals.ts, docs/decisions/0040): one writer at a time
 * draws ids in commit order, so in a read transaction every id up to the newest is settled, and a
 * read scans only the rows past the cache (a range of the rowid) and looks up the live ones it keeps.
 */
import { prefixCounts, type PrefixCounts, type PrefixRow, type PrefixTotals } from '../prefix-totals.js';
import type { Totals } from '../stats-specs.js';
import {
  CLAIMS_SPEC,
  JOBS_SPEC,
  ledgerSpec,
  tasksByState,
  tasksSpec,
  totalsOf,
  type PrefixSpec,
} from '../stats-specs.js';
import type { StoreStats } from '../observe-store.js';
import { KEPT_SELECT, keptOf, keptParams, keptUpsert, type KeptRow, type KeptTable } from '../stats-kept.js';
import type { SqliteExecutor } from './executor.js';

/** Ledger rows of a job's start: `job:started`, or a claim that started its job (decision 0023). */
const STARTED = `type = 'job:started' OR (type = 'job:claimed' AND json_extract(detail, '$.started') = 1)`;

/** Who judged a `job:timed_out` row's run (its detail's `by`, decision 0037). */
const TIMED_OUT_BY = `json_extract(detail, '$.by')`;

/**
 * The read of prefix-totals.ts for one table: its pending ids, then the range past the cache, its
 * final rows grouped by name and its live ones by id (grouping by an expression of the id took
 * three times as long on a first read of a million rows).
 */
function prefixSql(spec: PrefixSpec): string {
  const { table, name, final, live, where, mark, at } = spec;
  const hi = `(SELECT coalesce(max(id), 0) + 1 FROM ${table})`;
  return `SELECT 'p' AS part, id, ${name} AS name, ${final} AS final, 1 AS n, ${at} AS at, NULL AS lo, NULL AS hi
      FROM ${table} WHERE id IN (SELECT value FROM json_each(@pending))
    UNION ALL
    SELECT 's', NULL, ${name}, 1, count(*), min(${at}), NULL, NULL FROM ${table}
      WHERE id >= @from AND id < ${hi} AND ${where} AND ${final} GROUP BY ${name}
    UNION ALL
    SELECT 's', id, ${name}, 0, 1, ${at}, NULL, NULL FROM ${table}
      WHERE id >= @from AND id < ${hi} AND ${where} AND ${live}
    UNION ALL
    SELECT 'top', NULL, NULL, 0, ${hi}, NULL, NULL, NULL
    UNION ALL
    SELECT 'mark', NULL, NULL, 0, ${mark}, NULL, NULL, NULL${spec.retained ? RETAINED : ''}`;
}

/** Job retention's batches past the ones the cache has seen (migration 0038). */
const RETAINED = `
    UNION ALL
    SELECT 'cut', seq, status, 1, removed, NULL, first_id, last_id FROM stats_pruned WHERE seq > @seen
    UNION ALL
    SELECT 'seq', NULL, NULL, 0, seq, NULL, NULL, NULL FROM stats_retention
    UNION ALL
    SELECT 'dropped', NULL, NULL, 0, dropped, NULL, NULL, NULL FROM stats_retention`;

const SQL = {
  jobs: prefixSql(JOBS_SPEC),
  claims: prefixSql(CLAIMS_SPEC),
  ledger: prefixSql(ledgerSpec(STARTED, TIMED_OUT_BY)),
  tasks: prefixSql(tasksSpec('state_at')),
};

export interface StatsTotals {
  readonly jobs: PrefixTotals;
  readonly claims: PrefixTotals;
  readonly ledger: PrefixTotals;
  readonly tasks: PrefixTotals;
}

function counted(exec: SqliteExecutor, totals: PrefixTotals, sql: string): PrefixCounts {
  return prefixCounts(
    totals,
    (ask) =>
      exec
        .prepare(sql)
        .all({ from: ask.from, pending: JSON.stringify(ask.pending), seen: ask.seen }) as PrefixRow[],
  );
}

const TABLES = [
  ['jobs', 'jobs'],
  ['claims', 'claims'],
  ['ledger', 'ledger'],
  ['tasks', 'tasks'],
] as const satisfies readonly (readonly [keyof StatsTotals, KeptTable])[];

/** Jobs by status, job starts, claims and tasks by state, inside the caller's read transaction. */
export function totalsIn(
  exec: SqliteExecutor,
  totals: StatsTotals,
): Totals & Pick<StoreStats, 'tasksByState'> {
  // A table this store has no counts of starts from the persisted ones (stats-kept.ts).
  if (TABLES.some(([name]) => totals[name].ask().from === 0)) {
    const kept = keptOf(exec.prepare(KEPT_SELECT).all() as KeptRow[]);
    for (const [name, table] of TABLES) {
      const state = kept.get(table);
      if (state !== undefined) totals[name].adopt(state);
    }
  }
  const jobs = counted(exec, totals.jobs, SQL.jobs);
  const claims = counted(exec, totals.claims, SQL.claims);
  const ledger = counted(exec, totals.ledger, SQL.ledger);
  return {
    ...totalsOf(jobs, claims, ledger),
    tasksByState: tasksByState(counted(exec, totals.tasks, SQL.tasks)),
  };
}

const UPSERT = keptUpsert(() => '?');

/**
 * Persists the counts that are due (prefix-totals.ts), after stats' read transaction, when the
 * write lock is free at once; never fails or waits: a write left is tried after the next read.
 */
export function persistTotals(exec: SqliteExecutor, totals: StatsTotals): void {
  for (const [name, table] of TABLES) {
    const due = totals[name].due();
    if (due === null) continue;
    try {
      if (exec.writeIfFree(() => exec.prepare(UPSERT).run(...keptParams(table, due))))
        totals[name].persistedAs(due);
    } catch {
      return; // a read-only or damaged file: stats' figures stand without it
    }
  }
}
