/**
 * Exact counts over a table that grows at its end, without reading it whole on every call
 * (docs/decisions/0040). A row is either final (a terminal job, a released claim, any ledger row:
 * it never changes again) or live. Below `through` every row has been seen once: the final ones
 * are summed in `counts` by name, the live ones are kept as `pending` ids and looked up again on
 * each read. A read returns, in one snapshot:
 *  - `p` rows: each pending id still present, with its name and whether it is final now;
 *  - `s` rows: rows with from <= id < top, final ones summed by name, live ones one row per id;
 *  - `f` rows: rows with id >= top, summed by name and finality (counted, never kept);
 *  - `top`: the settled bound (no write still in flight can add a row below it; on SQLite the
 *    newest id + 1, on PostgreSQL a LedgerHorizon of the table);
 *  - `mark`: the table's mark (stats_marks, migration 0037; the ledger's lowest id), which moves
 *    when a counted row is deleted or (a task) leaves its final state.
 * A mark other than the cached one means a counted row changed: the cache starts over from id 0.
 * Nothing here reads the database; the engines run the reads.
 */
import type { Instant } from '../core/time.js';

export interface PrefixRow {
  readonly part: 'p' | 's' | 'f' | 'top' | 'mark';
  readonly id: number | null;
  readonly name: string | null;
  readonly final: boolean | number;
  readonly n: number;
  /** The least of a time column over the row or group (tasks' state_at); null where none is kept. */
  readonly at?: Instant | null | undefined;
}

/** What the next read covers. */
export interface PrefixAsk {
  readonly from: number;
  readonly pending: readonly number[];
}

/** Rows present now, by name: the final ones and the live ones, and the least `at` of each name. */
export interface PrefixCounts {
  readonly final: ReadonlyMap<string, number>;
  readonly live: ReadonlyMap<string, number>;
  readonly least: ReadonlyMap<string, number>;
}

const add = (map: Map<string, number>, name: string | null, count: number): void => {
  const key = name ?? '';
  map.set(key, (map.get(key) ?? 0) + Number(count));
};

const least = (map: Map<string, number>, name: string | null, at: number | null | undefined): void => {
  if (at === null || at === undefined) return;
  const key = name ?? '';
  const was = map.get(key);
  map.set(key, was === undefined ? Number(at) : Math.min(was, Number(at)));
};

export class PrefixTotals {
  private through = 0;
  private counts = new Map<string, number>();
  private mins = new Map<string, number>();
  private pending: readonly number[] = [];
  private mark: number | null = null;

  /** The range and ids the next read must cover. */
  ask(): PrefixAsk {
    return { from: this.through, pending: this.pending };
  }

  /**
   * Folds a read made for `asked` into the cache and returns the counts it shows; null (and
   * nothing kept) when the deletion mark moved since the cache was built: read again from 0.
   */
  fold(asked: PrefixAsk, rows: readonly PrefixRow[]): PrefixCounts | null {
    const mark = Number(rows.find((row) => row.part === 'mark')?.n ?? 0);
    // A read asked before another was folded (the cache moved on since) cannot be added to it.
    if (asked.from > 0 && (mark !== this.mark || asked.from !== this.through)) {
      this.reset();
      return null;
    }
    const top = Math.max(asked.from, Number(rows.find((row) => row.part === 'top')?.n ?? 0));
    const counts = new Map(asked.from === 0 ? [] : this.counts);
    const mins = new Map(asked.from === 0 ? [] : this.mins);
    const now = {
      live: new Map<string, number>(),
      final: new Map<string, number>(),
      least: new Map<string, number>(),
    };
    const pending: number[] = [];
    for (const row of rows) {
      if (row.part === 'top' || row.part === 'mark') continue;
      const isFinal = row.final === true || row.final === 1;
      const kept = isFinal && row.part !== 'f';
      least(kept ? mins : now.least, row.name, row.at);
      if (!isFinal) add(now.live, row.name, row.n);
      if (kept) add(counts, row.name, row.n);
      else if (isFinal) add(now.final, row.name, row.n);
      else if (row.part !== 'f' && row.id !== null) pending.push(Number(row.id));
    }
    this.through = top;
    this.counts = counts;
    this.mins = mins;
    this.pending = pending;
    this.mark = mark;
    for (const [name, count] of counts) add(now.final, name, count);
    for (const [name, at] of mins) least(now.least, name, at);
    return now;
  }

  reset(): void {
    this.through = 0;
    this.counts = new Map();
    this.mins = new Map();
    this.pending = [];
    this.mark = null;
  }
}

/** Reads with `read` and folds, once more from id 0 when rows were deleted since the cache was built. */
export function prefixCounts(
  totals: PrefixTotals,
  read: (ask: PrefixAsk) => readonly PrefixRow[],
): PrefixCounts {
  const asked = totals.ask();
  const counts = totals.fold(asked, read(asked));
  if (counts !== null) return counts;
  const again = totals.ask();
  const fresh = totals.fold(again, read(again));
  if (fresh === null) throw new Error('a read from id 0 is always folded');
  return fresh;
}
