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
 *    when a counted row is deleted or (a task) leaves its final state;
 *  - `cut` rows (jobs only): job retention's batches past `seen`, the jobs one removed by name, with
 *    their lowest and highest id (`lo`, `hi`; stats_pruned, migration 0038), and `seq` (the newest
 *    batch) and `dropped` (the newest batch pruned out of that log).
 * A mark other than the cached one means a counted row changed: the cache starts over from id 0.
 * A batch below the cache is subtracted from it when none of its ids can be a kept live one; one
 * past the cache never was in it; anything else (or a log pruned past `seen`) starts over.
 * Nothing here reads the database; the engines run the reads.
 */
import type { Instant } from '../core/time.js';

export interface PrefixRow {
  readonly part: 'p' | 's' | 'f' | 'top' | 'mark' | 'cut' | 'seq' | 'dropped';
  readonly id: number | null;
  readonly name: string | null;
  readonly final: boolean | number;
  readonly n: number;
  /** The least of a time column over the row or group (tasks' state_at); null where none is kept. */
  readonly at?: Instant | null | undefined;
  /** A `cut` row's lowest and highest removed id. */
  readonly lo?: number | null | undefined;
  readonly hi?: number | null | undefined;
}

/** What the next read covers. */
export interface PrefixAsk {
  readonly from: number;
  readonly pending: readonly number[];
  /** The newest retention batch the cache has taken in (subtracted, or counted without). */
  readonly seen: number;
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

/**
 * A cache as stats_kept persists it (migration 0038) for stores that have none yet: valid for any
 * of them, since the read that takes it up checks its marks and reads only past its `through`.
 */
export interface KeptState {
  readonly through: number;
  readonly mark: number;
  readonly seen: number;
  readonly counts: readonly (readonly [string, number])[];
  readonly mins: readonly (readonly [string, number])[];
  readonly pending: readonly number[];
}

/** How far a store's counts move past the persisted ones before it persists them again. */
const PERSIST_EVERY = 10_000;
/** Retention batches after which it is persisted too: half the batches `stats_pruned` keeps. */
const PERSIST_SEEN_EVERY = 500;

const part = (rows: readonly PrefixRow[], name: PrefixRow['part']): number =>
  Number(rows.find((row) => row.part === name)?.n ?? 0);

/**
 * Subtracts from `counts` the retention batches of a read asked at `asked`; false when one may
 * have removed a row the counts do not hold (a kept live id in its range and gone, ids on both sides of
 * the cache's end, or batches pruned out of the log before they were seen).
 */
function cut(counts: Map<string, number>, asked: PrefixAsk, rows: readonly PrefixRow[]): boolean {
  if (part(rows, 'dropped') > asked.seen) return false;
  // A kept live id the read still finds was not removed by any batch, whatever its range.
  const present = new Set(
    rows.filter((row) => row.part === 'p' && row.id !== null).map((row) => Number(row.id)),
  );
  for (const row of rows) {
    if (row.part !== 'cut') continue;
    const [lo, hi] = [Number(row.lo), Number(row.hi)];
    if (lo >= asked.from) continue; // past the kept counts: never in them
    if (hi >= asked.from || asked.pending.some((id) => !present.has(id) && id >= lo && id <= hi))
      return false;
    const left = (counts.get(row.name ?? '') ?? 0) - Number(row.n);
    if (left < 0) return false;
    counts.set(row.name ?? '', left);
  }
  return true;
}

export class PrefixTotals {
  private through = 0;
  private seen = 0;
  /** `through` of the cache last persisted or taken up, and whether it was counted from 0 since. */
  private persisted = 0;
  private persistedSeen = 0;
  private recounted = false;
  private counts = new Map<string, number>();
  private mins = new Map<string, number>();
  private pending: readonly number[] = [];
  private mark: number | null = null;

  /** Takes up a persisted cache when this one holds nothing; the next read checks its marks. */
  adopt(kept: KeptState): void {
    if (this.through !== 0 || kept.through <= 0) return;
    this.through = kept.through;
    this.mark = kept.mark;
    this.seen = kept.seen;
    this.counts = new Map(kept.counts);
    this.mins = new Map(kept.mins);
    this.pending = [...kept.pending];
    this.persisted = kept.through;
    this.persistedSeen = kept.seen;
  }

  /**
   * The cache to persist: after a count from 0, or when it moved far past the last one (ids or
   * retention batches); else null.
   */
  due(): KeptState | null {
    if (this.through === 0 || this.mark === null) return null;
    const moved =
      this.through - this.persisted >= PERSIST_EVERY || this.seen - this.persistedSeen >= PERSIST_SEEN_EVERY;
    if (!this.recounted && !moved) return null;
    return {
      through: this.through,
      mark: this.mark,
      seen: this.seen,
      counts: [...this.counts],
      mins: [...this.mins],
      pending: this.pending,
    };
  }

  /** Says the cache of `kept` (from due()) was persisted. */
  persistedAs(kept: KeptState): void {
    this.persisted = kept.through;
    this.persistedSeen = kept.seen;
    if (kept.through === this.through) this.recounted = false;
  }

  /** The range and ids the next read must cover. */
  ask(): PrefixAsk {
    return { from: this.through, pending: this.pending, seen: this.seen };
  }

  /**
   * Folds a read made for `asked` into the cache and returns the counts it shows; null (and
   * nothing kept) when the deletion mark moved since the cache was built: read again from 0.
   */
  fold(asked: PrefixAsk, rows: readonly PrefixRow[]): PrefixCounts | null {
    const mark = part(rows, 'mark');
    const counts = new Map(asked.from === 0 ? [] : this.counts);
    // A read asked before another was folded (the cache moved on since) cannot be added to it.
    const same = mark === this.mark && asked.from === this.through && asked.seen === this.seen;
    if (asked.from > 0 && !(same && cut(counts, asked, rows))) {
      this.reset();
      return null;
    }
    const top = Math.max(asked.from, part(rows, 'top'));
    const mins = new Map(asked.from === 0 ? [] : this.mins);
    const now = {
      live: new Map<string, number>(),
      final: new Map<string, number>(),
      least: new Map<string, number>(),
    };
    const pending: number[] = [];
    for (const row of rows) {
      if (row.part !== 'p' && row.part !== 's' && row.part !== 'f') continue;
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
    this.seen = part(rows, 'seq');
    if (asked.from === 0) this.recounted = true;
    for (const [name, count] of counts) add(now.final, name, count);
    for (const [name, at] of mins) least(now.least, name, at);
    return now;
  }

  reset(): void {
    this.through = 0;
    this.seen = 0;
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
