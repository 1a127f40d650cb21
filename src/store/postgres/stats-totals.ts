/**
 * stats()' running counts on PostgreSQL (prefix-totals.ts, docs/decisions/0040). Ids come from a
 * sequence and commit in any order, so the cache only ever grows over ids a LedgerHorizon of the
 * table has settled (no transaction in flight can still commit a row below them); rows past it
 * are counted on every read. The three reads are subqueries of stats' one statement, so every
 * figure comes from one snapshot.
 */
import { PrefixTotals, type PrefixAsk, type PrefixRow } from '../prefix-totals.js';
import {
  CLAIMS_SPEC,
  JOBS_SPEC,
  ledgerSpec,
  totalsOf,
  type PrefixSpec,
  type Totals,
} from '../stats-specs.js';
import type { PgExecutor } from './executor.js';
import { LedgerHorizon } from './ledger-horizon.js';

/** Ledger rows of a job's start: `job:started`, or a claim that started its job (decision 0023). */
const STARTED = `type = 'job:started' OR (type = 'job:claimed' AND detail @> '{"started": true}')`;

/** One table's read as a JSON array of PrefixRows; `at` is the index of its first parameter (from, pending, top). */
function prefixSql(spec: PrefixSpec, at: number): string {
  const { table, name, final, where, mark } = spec;
  const [from, pending, top] = [`$${at}::bigint`, `$${at + 1}::bigint[]`, `$${at + 2}::bigint`];
  const live = final === 'true' ? 'NULL' : `CASE WHEN ${final} THEN NULL ELSE id END`;
  // PostgreSQL refuses a constant in GROUP BY (the ledger's name and finality are constants).
  const groupBy = (...exprs: string[]): string => {
    const kept = exprs.filter((expr) => !/^(NULL|true|'[^']*')$/.test(expr));
    return kept.length === 0 ? '' : `GROUP BY ${kept.join(', ')}`;
  };
  return `(SELECT coalesce(jsonb_agg(r), '[]') FROM (
    SELECT 'p' AS part, id, ${name} AS name, ${final} AS final, 1::bigint AS n FROM ${table}
      WHERE id = ANY (${pending})
    UNION ALL
    SELECT 's', ${live}, ${name}, ${final}, count(*) FROM ${table}
      WHERE id >= ${from} AND id < ${top} AND ${where} ${groupBy(live, name, final)}
    UNION ALL
    SELECT 'f', NULL, ${name}, ${final}, count(*) FROM ${table}
      WHERE id >= greatest(${from}, ${top}) AND ${where} ${groupBy(name, final)}
    UNION ALL SELECT 'top', NULL, NULL, false, ${top}
    UNION ALL SELECT 'mark', NULL, NULL, false, ${mark}) r)`;
}

/** The three reads, parameters $1…$9, as the columns jobs_rows, claims_rows and ledger_rows. */
export const TOTALS_COLUMNS = `${prefixSql(JOBS_SPEC, 1)} AS jobs_rows,
     ${prefixSql(CLAIMS_SPEC, 4)} AS claims_rows,
     ${prefixSql(ledgerSpec(STARTED), 7)} AS ledger_rows`;

export interface TotalsRows {
  jobs_rows: PrefixRow[];
  claims_rows: PrefixRow[];
  ledger_rows: PrefixRow[];
}

interface Part {
  readonly totals: PrefixTotals;
  readonly horizon: LedgerHorizon;
  readonly rows: (row: TotalsRows) => readonly PrefixRow[];
}

/** A store's running counts of the jobs, the claims and the ledger, with a horizon of each table. */
export class StatsTotals {
  private readonly parts: readonly Part[];

  constructor(exec: PgExecutor) {
    const part = (table: 'jobs' | 'claims' | 'audit_events', rows: Part['rows']): Part => ({
      totals: new PrefixTotals(),
      horizon: new LedgerHorizon(exec, table),
      rows,
    });
    this.parts = [
      part('jobs', (row) => row.jobs_rows),
      part('claims', (row) => row.claims_rows),
      part('audit_events', (row) => row.ledger_rows),
    ];
  }

  /**
   * Runs `read` (stats' statement) with the parameters of the three reads, and the figures it
   * gives; read again, from id 0 for a table whose rows were deleted since its cache was built.
   */
  async read<R extends TotalsRows>(
    read: (params: unknown[]) => Promise<R>,
  ): Promise<{ row: R; totals: Totals }> {
    const tops = await Promise.all(
      this.parts.map(async (part) => Number(await part.horizon.settledNow()) + 1),
    );
    for (let attempt = 0; ; attempt++) {
      const asks: PrefixAsk[] = this.parts.map((part) => part.totals.ask());
      const row = await read(asks.flatMap((ask, index) => [ask.from, [...ask.pending], tops[index] ?? 1]));
      const counts = this.parts.map((part, index) =>
        part.totals.fold(asks[index] ?? { from: 0, pending: [] }, part.rows(row)),
      );
      const [jobs, claims, ledger] = counts;
      if (jobs && claims && ledger) return { row, totals: totalsOf(jobs, claims, ledger) };
      // A table whose cache was dropped is read from id 0 next, which always folds.
      if (attempt > this.parts.length) throw new Error('stats: the running counts never settled');
    }
  }
}
