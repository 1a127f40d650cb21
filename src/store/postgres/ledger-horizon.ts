/**
 * Which ledger ids are settled on PostgreSQL: no transaction still in flight can commit a row with
 * a lower id. Ids come from a sequence and commit in any order, so a row visible now may later get
 * a neighbour below it.
 *
 * A look reads the highest visible id M, then the transactions holding RowExclusiveLock on
 * audit_events (pg_locks). Any row with an id below M was drawn before M was, by a transaction
 * that already held that lock when we looked (the table is locked before the insert runs); once
 * exactly those transactions have ended, every id up to M is final. Writers that start later are
 * never waited for, and transactions that write no ledger row (an export, an idle psql) neither.
 * This relies on the identity's sequence handing out ids one at a time (CACHE 1, the default).
 * pg_locks lists the locks of every database of the server, and databases made from one template
 * give audit_events the same oid: only this database's writers are waited for.
 *
 * pg_locks is not free: reading it takes every lock-table partition, which stalls writers taking
 * locks meanwhile (polling it every few ms during a drain halved the bench's throughput). So each
 * look reads it once, for both questions at the same time (have the writers we wait for ended? who
 * writes now?), and a sealer that looks every round settles, in the steady state, the M of its
 * previous look with one read per round. Only a first look waits within the call, polling with a
 * growing pause.
 *
 * A settled id stays settled, so the highest one any look found is kept (`latest`): a follower
 * (`baton audit --follow`) asks for it without waiting and reads up to it. Looks never overlap:
 * one in flight is shared by whoever asks meanwhile, since two at once would judge the writers one
 * of them waits for by a lock table the other read (decision 0027).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgExecutor } from './executor.js';

/** The writers of `table` now, and which of the transactions `$1` are still alive. */
const locksOf = (table: string): string => `
SELECT locktype = 'relation' AS writer, virtualtransaction AS vxid FROM pg_locks
WHERE (locktype = 'relation' AND relation = '${table}'::regclass AND mode = 'RowExclusiveLock'
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND pid IS DISTINCT FROM pg_backend_pid())
   OR (locktype = 'virtualxid' AND virtualxid = ANY($1::text[]))`;

const PAUSE_FIRST_MS = 10;
const PAUSE_MAX_MS = 200;
/** A follower's answer may be this old (settledNow): pg_locks is read at most about 4 times a second for them. */
const FOLLOWER_LOOK_MS = 250;

export class LedgerHorizon {
  /** The last M read, and the writers that were in flight then. */
  private pending: { readonly top: number; readonly waiting: readonly string[] } | null = null;
  /** The highest id any look settled; 0 before the first. */
  private latest = 0;
  /** When the last look ended (performance.now()); -Infinity before the first. */
  private lookedAt = Number.NEGATIVE_INFINITY;
  /** The look in flight, shared by every caller until it ends. */
  private current: Promise<number | null> | null = null;

  /**
   * `table` (the ledger's by default) must take ids from a sequence, one at a time: stats() keeps
   * a horizon of `jobs`, `claims` and `tasks` too (docs/decisions/0040).
   */
  constructor(
    private readonly exec: PgExecutor,
    private readonly table: 'audit_events' | 'jobs' | 'claims' | 'tasks' = 'audit_events',
  ) {}

  /** The highest settled id, waiting at most timeoutMs for one; null when none settled in time. */
  async settled(timeoutMs: number): Promise<number | null> {
    const deadline = performance.now() + timeoutMs;
    for (let pause = PAUSE_FIRST_MS; ; pause = Math.min(2 * pause, PAUSE_MAX_MS)) {
      const settled = await this.look();
      if (settled !== null) return settled;
      if (performance.now() + pause > deadline) return null;
      await sleep(pause);
    }
  }

  /**
   * The highest id known settled, never waiting for a writer: after a look of its own, unless one
   * ended less than FOLLOWER_LOOK_MS ago. Followers (`baton audit --follow`, each polling) then
   * read pg_locks a few times a second per process, whatever their number, not once per poll each.
   */
  async settledNow(): Promise<number> {
    if (performance.now() - this.lookedAt >= FOLLOWER_LOOK_MS) await this.look();
    return this.latest;
  }

  private look(): Promise<number | null> {
    if (this.current === null) {
      this.current = this.lookOnce().finally(() => {
        this.current = null;
        this.lookedAt = performance.now();
      });
    }
    return this.current;
  }

  private async lookOnce(): Promise<number | null> {
    // M first, then the lock table: the order the argument above needs.
    const [max] = await this.exec.rows<{ id: number | null }>(`SELECT max(id) AS id FROM ${this.table}`);
    const top = max?.id ?? 0;
    const rows = await this.exec.rows<{ writer: boolean; vxid: string }>(locksOf(this.table), [
      this.pending?.waiting ?? [],
    ]);
    const alive = new Set(rows.filter((row) => !row.writer).map((row) => row.vxid));
    const writers = [...new Set(rows.filter((row) => row.writer).map((row) => row.vxid))];
    let settled: number | null = null;
    if (this.pending !== null && !this.pending.waiting.some((vxid) => alive.has(vxid))) {
      settled = this.pending.top;
      this.pending = null;
    }
    if (this.pending === null) {
      if (writers.length === 0) settled = top;
      else this.pending = { top, waiting: writers };
    }
    if (settled !== null) this.latest = Math.max(this.latest, settled);
    return settled;
  }
}
