/**
 * stats()' running counts persisted in the database (stats_kept, migration 0038, docs/decisions/0040),
 * so that a store that has none yet (a `baton status`, a new `baton up`) starts from them and reads
 * only the rows past them, instead of every table once. A row is one store's cache of one table as
 * it was after a read: any such state stays valid, since the read that takes it up checks its
 * marks (another mark: counted again from 0), subtracts retention's batches past its `seen`, looks
 * up its live ids and reads past its `through`. Written rarely (prefix-totals.ts: after a count
 * from 0, or every 10,000 ids), never on a hot path; a write that cannot be made at once is left.
 */
import type { KeptState } from './prefix-totals.js';

/**
 * The tables, by the name stats_kept gives them. The ledger's counts (job starts and timed-out runs
 * by who judged them) are kept as `ledger` (migration 0045): an `audit_events` row holds the older
 * counts of starts alone, which would leave out the timed-out rows below it, and is never read.
 */
export type KeptTable = 'jobs' | 'claims' | 'ledger' | 'tasks';

export interface KeptRow {
  readonly tbl: string;
  readonly through: number | string;
  readonly mark: number | string;
  readonly seen: number | string;
  readonly counts: string;
  readonly mins: string;
  readonly pending: string;
}

export const KEPT_SELECT = 'SELECT tbl, through, mark, seen, counts, mins, pending FROM stats_kept';

/**
 * The upsert of one row ($1…$7 or ?: tbl, through, mark, seen, counts, mins, pending). A newer row
 * (a later mark, or the same mark further on) is not replaced by an older one.
 */
export const keptUpsert = (param: (position: number) => string): string =>
  `INSERT INTO stats_kept (tbl, through, mark, seen, counts, mins, pending)
  VALUES (${[1, 2, 3, 4, 5, 6, 7].map(param).join(', ')})
  ON CONFLICT (tbl) DO UPDATE SET through = excluded.through, mark = excluded.mark, seen = excluded.seen,
    counts = excluded.counts, mins = excluded.mins, pending = excluded.pending
  WHERE excluded.mark > stats_kept.mark
    OR (excluded.mark = stats_kept.mark AND excluded.through >= stats_kept.through)`;

export const keptParams = (table: KeptTable, kept: KeptState): unknown[] => [
  table,
  kept.through,
  kept.mark,
  kept.seen,
  JSON.stringify(kept.counts),
  JSON.stringify(kept.mins),
  JSON.stringify(kept.pending),
];

const pairs = (text: string): [string, number][] =>
  (JSON.parse(text) as unknown[][]).map(([name, count]) => [String(name), Number(count)]);

/** The persisted caches by table; a row that does not parse is left out (the store counts from 0). */
export function keptOf(rows: readonly KeptRow[]): Map<string, KeptState> {
  const kept = new Map<string, KeptState>();
  for (const row of rows) {
    try {
      kept.set(row.tbl, {
        through: Number(row.through),
        mark: Number(row.mark),
        seen: Number(row.seen),
        counts: pairs(row.counts),
        mins: pairs(row.mins),
        pending: (JSON.parse(row.pending) as unknown[]).map(Number),
      });
    } catch {
      // Not ours to repair: without it the store counts the table from its first row, as before.
    }
  }
  return kept;
}
