/**
 * stats()' running counts on PostgreSQL (prefix-totals.ts, docs/decisions/0040). Ids come from a
 * sequence and commit in any order, so the cache only ever grows over ids a LedgerHorizon of the
 * table has settled (no transaction in flight can still commit a row below them); rows past it
 * are counted on every read. The four reads (jobs, claims, ledger, tasks) are subqueries of
 * stats' one statement, so every figure comes from one snapshot.
 */
import type { StoreStats } from '../observe-store.js';
import { PrefixTotals, type PrefixAsk, type PrefixRow } from '../prefix-totals.js';
import {
  CLAIMS_SPEC,
  JOBS_SPEC,
  ledgerSpec,
  tasksByState,
  tasksSpec,
  totalsOf,
  type PrefixSpec,
  type Totals,
} from '../stats-specs.js';
import type { PgExecutor } from './executor.js';
import { LedgerHorizon } from './ledger-horizon.js';
import { KEPT_SELECT, keptOf, keptParams, keptUpsert, type KeptRow, type KeptTable } from '../stats-kept.js';

/** Ledger rows of a job's start: `job:started`, or a claim that started its job (decision 0023). */
const STARTED = `type = 'job:started' OR (type = 'job:claimed' AND detail @> '{"started": true}')`;

/** Who judged a `job:timed_out` row's run (its detail's `by`, decision 0037). */
const TIMED_OUT_BY = `detail->>'by'`;

/**
 * One table's read as a JSON array of PrefixRows: the range past the cache gives its final rows
 * grouped by name and its live ones by id (grouping by an expression of the id took seconds on a
 * first read of a million rows); `first` is the index of its first parameter (from, pending, top,
 * seen). */
function prefixSql(spec: PrefixSpec, first: number): string {
  const { table, name, final, live, where, mark } = spec;
  const at = `(${spec.at})::float8`;
  const [from, pending, top] = [`$${first}::bigint`, `$${first + 1}::bigint[]`, `$${first + 2}::bigint`];
  // Tables without retention's batches answer the `seen` they were asked with (0).
  const seen = `$${first + 3}::bigint`;
  // PostgreSQL refuses a constant in GROUP BY (the ledger's name and finality are constants).
  const groupBy = (...exprs: string[]): string => {
    const kept = exprs.filter((expr) => !/^(NULL|true|'[^']*')$/.test(expr));
    return kept.length === 0 ? '' : `GROUP BY ${kept.join(', ')}`;
  };
  const none = 'NULL::bigint, NULL::bigint';
  return `(SELECT coalesce(jsonb_agg(r), '[]') FROM (
    SELECT 'p' AS part, id, ${name} AS name, ${final} AS final, 1::bigint AS n, ${at} AS at,
        NULL::bigint AS lo, NULL::bigint AS hi FROM ${table}
      WHERE id = ANY (${pending})
    UNION ALL
    SELECT 's', NULL, ${name}, true, count(*), min(${at}), ${none} FROM ${table}
      WHERE id >= ${from} AND id < ${top} AND ${where} AND ${final} ${groupBy(name)}
    UNION ALL
    SELECT 's', id, ${name}, false, 1, ${at}, ${none} FROM ${table}
      WHERE id >= ${from} AND id < ${top} AND ${where} AND ${live}
    UNION ALL
    SELECT 'f', NULL, ${name}, ${final}, count(*), min(${at}), ${none} FROM ${table}
      WHERE id >= greatest(${from}, ${top}) AND ${where} ${groupBy(name, final)}
    UNION ALL SELECT 'top', NULL, NULL, false, ${top}, NULL, ${none}
    UNION ALL SELECT 'mark', NULL, NULL, false, ${mark}, NULL, ${none}
    ${spec.retained ? retained(seen) : `UNION ALL SELECT 'seq', NULL, NULL, false, ${seen}, NULL, ${none}`}) r)`;
}

/**
 * Job retention's batches past the ones the cache has seen (migration 0038). Batches lock the
 * stats_retention row and commit in the order of their numbers, so a snapshot sees a prefix.
 */
const retained = (seen: string): string => `UNION ALL
    SELECT 'cut', seq, status, true, removed, NULL, first_id, last_id FROM stats_pruned WHERE seq > ${seen}
    UNION ALL SELECT 'seq', NULL, NULL, false, seq, NULL, NULL, NULL FROM stats_retention
    UNION ALL SELECT 'dropped', NULL, NULL, false, dropped, NULL, NULL, NULL FROM stats_retention`;

/** A task's state_at in ms. */
const STATE_AT = 'round(extract(epoch FROM state_at) * 1000)';

/** The four reads, parameters $1…$16, as the columns jobs_rows, claims_rows, ledger_rows and tasks_rows. */
export const TOTALS_COLUMNS = `${prefixSql(JOBS_SPEC, 1)} AS jobs_rows,
     ${prefixSql(CLAIMS_SPEC, 5)} AS claims_rows,
     ${prefixSql(ledgerSpec(STARTED, TIMED_OUT_BY), 9)} AS ledger_rows,
     ${prefixSql(tasksSpec(STATE_AT), 13)} AS tasks_rows`;

export interface TotalsRows {
  jobs_rows: PrefixRow[];
  claims_rows: PrefixRow[];
  ledger_rows: PrefixRow[];
  tasks_rows: PrefixRow[];
}

interface Part {
  readonly table: KeptTable;
  readonly totals: PrefixTotals;
  readonly horizon: LedgerHorizon;
  readonly rows: (row: TotalsRows) => readonly PrefixRow[];
}

const UPSERT = keptUpsert((position) => `$${position}`);

type HorizonTable = 'jobs' | 'claims' | 'audit_events' | 'tasks';

/** A store's running counts of the jobs, the claims and the ledger, with a horizon of each table. */
export class StatsTotals {
  private readonly parts: readonly Part[];

  constructor(private readonly exec: PgExecutor) {
    // The horizon settles the ids of the table itself (the ledger's: audit_events).
    const part = (table: KeptTable, horizonOf: HorizonTable, rows: Part['rows']): Part => ({
      table,
      totals: new PrefixTotals(),
      horizon: new LedgerHorizon(exec, horizonOf),
      rows,
    });
    this.parts = [
      part('jobs', 'jobs', (row) => row.jobs_rows),
      part('claims', 'claims', (row) => row.claims_rows),
      part('ledger', 'audit_events', (row) => row.ledger_rows),
      part('tasks', 'tasks', (row) => row.tasks_rows),
    ];
  }

  /**
   * Runs `read` (stats' statement) with the parameters of the three reads, and the figures it
   * gives; read again, from id 0 for a table whose rows were deleted since its cache was built.
   */
  read<R extends TotalsRows>(
    read: (params: unknown[]) => Promise<R>,
  ): Promise<{ row: R; totals: Totals & Pick<StoreStats, 'tasksByState'> }> {
    // One at a time: two reads asked from the same kept point and folded one after the other
    // would count the rows between that point and the first fold's twice (the dashboard and a
    // scrape can ask at once). SQLite's reads are synchronous and never interleave.
    const run = this.queue.then(() => this.readOnce(read));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private queue: Promise<unknown> = Promise.resolve();

  private async readOnce<R extends TotalsRows>(
    read: (params: unknown[]) => Promise<R>,
  ): Promise<{ row: R; totals: Totals & Pick<StoreStats, 'tasksByState'> }> {
    const tops = await Promise.all(
      this.parts.map(async (part) => Number(await part.horizon.settledNow()) + 1),
    );
    if (this.parts.some((part) => part.totals.ask().from === 0)) await this.adopt();
    for (let attempt = 0; ; attempt++) {
      const asks: PrefixAsk[] = this.parts.map((part) => part.totals.ask());
      const row = await read(
        asks.flatMap((ask, index) => [ask.from, [...ask.pending], tops[index] ?? 1, ask.seen]),
      );
      const counts = this.parts.map((part, index) =>
        part.totals.fold(asks[index] ?? { from: 0, pending: [], seen: 0 }, part.rows(row)),
      );
      const [jobs, claims, ledger, tasks] = counts;
      if (jobs && claims && ledger && tasks) {
        await this.persist();
        return { row, totals: { ...totalsOf(jobs, claims, ledger), tasksByState: tasksByState(tasks) } };
      }
      // A table whose cache was dropped is read from id 0 next, which always folds.
      if (attempt > this.parts.length) throw new Error('stats: the running counts never settled');
    }
  }

  /**
   * A table this store has no counts of starts from the persisted ones (stats-kept.ts). Their
   * `through` was a settled horizon when they were counted; the read checks their marks.
   */
  private async adopt(): Promise<void> {
    const kept = keptOf(await this.exec.rows<KeptRow>(KEPT_SELECT).catch(() => []));
    for (const part of this.parts) {
      const state = kept.get(part.table);
      if (state !== undefined) part.totals.adopt(state);
    }
  }

  /** Persists the counts that are due (prefix-totals.ts); a write that fails is tried after the next read. */
  private async persist(): Promise<void> {
    for (const part of this.parts) {
      const due = part.totals.due();
      if (due === null) continue;
      try {
        await this.exec.rows(UPSERT, keptParams(part.table, due));
        part.totals.persistedAs(due);
      } catch {
        return; // stats' figures stand without it
      }
    }
  }
}
