/**
 * stats()' running counts on SQLite (prefix-totals.ts, docs/decisions/0040): one writer at a time
 * draws ids in commit order, so in a read transaction every id up to the newest is settled, and a
 * read scans only the rows past the cache (a range of the rowid) and looks up the live ones it keeps.
 */
import { prefixCounts, type PrefixCounts, type PrefixRow, type PrefixTotals } from '../prefix-totals.js';
import type { Totals } from '../stats-specs.js';
import { CLAIMS_SPEC, JOBS_SPEC, ledgerSpec, totalsOf, type PrefixSpec } from '../stats-specs.js';
import type { SqliteExecutor } from './executor.js';

/** Ledger rows of a job's start: `job:started`, or a claim that started its job (decision 0023). */
const STARTED = `type = 'job:started' OR (type = 'job:claimed' AND json_extract(detail, '$.started') = 1)`;

/** The read of prefix-totals.ts for one table: its pending ids, the range past the cache, the rest. */
function prefixSql(spec: PrefixSpec): string {
  const { table, name, final, where, mark } = spec;
  const hi = `(SELECT coalesce(max(id), 0) + 1 FROM ${table})`;
  return `SELECT 'p' AS part, id, ${name} AS name, ${final} AS final, 1 AS n FROM ${table}
      WHERE id IN (SELECT value FROM json_each(@pending))
    UNION ALL
    SELECT 's', CASE WHEN ${final} THEN NULL ELSE id END, ${name}, ${final}, count(*) FROM ${table}
      WHERE id >= @from AND id < ${hi} AND ${where}
      GROUP BY CASE WHEN ${final} THEN NULL ELSE id END, ${name}, ${final}
    UNION ALL
    SELECT 'top', NULL, NULL, 0, ${hi}
    UNION ALL
    SELECT 'mark', NULL, NULL, 0, ${mark}`;
}

const SQL = {
  jobs: prefixSql(JOBS_SPEC),
  claims: prefixSql(CLAIMS_SPEC),
  ledger: prefixSql(ledgerSpec(STARTED)),
};

export interface StatsTotals {
  readonly jobs: PrefixTotals;
  readonly claims: PrefixTotals;
  readonly ledger: PrefixTotals;
}

function counted(exec: SqliteExecutor, totals: PrefixTotals, sql: string): PrefixCounts {
  return prefixCounts(
    totals,
    (ask) => exec.prepare(sql).all({ from: ask.from, pending: JSON.stringify(ask.pending) }) as PrefixRow[],
  );
}

/** Jobs by status, job starts and claims, inside the caller's read transaction. */
export function totalsIn(exec: SqliteExecutor, totals: StatsTotals): Totals {
  const jobs = counted(exec, totals.jobs, SQL.jobs);
  const claims = counted(exec, totals.claims, SQL.claims);
  const ledger = counted(exec, totals.ledger, SQL.ledger);
  return totalsOf(jobs, claims, ledger);
}
