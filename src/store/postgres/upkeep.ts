/**
 * Queue upkeep on PostgreSQL: a claim leaves its job's entry in the `jobs_queue` index dead (the
 * row's new version is no longer queued), and the claim scan walks the dead entries at the head
 * of the queue on every call until VACUUM removes them. Autovacuum waits for a fifth of the table
 * to change, and a draining queue soon walks pages of dead entries for each claim (7% of the
 * claim statement's CPU at 20,000 jobs, more with a bigger backlog; docs/decisions/0002).
 *
 * So each store counts the jobs it takes from the queue and, every `claims` of them, vacuums
 * `jobs` in the background on a connection of its own: at most one run at a time per store,
 * SKIP_LOCKED (another process's run is as good), no truncation (which would take an exclusive
 * lock), index cleanup always. Its cost grows with the table, so it keeps to a share of the
 * time: after a run of d ms the next waits at least d × (1 / share − 1). A failed run (the
 * server gone, a timeout) is dropped and the next waits a minute; a role that does not own the
 * table gets a warning from PostgreSQL and a run that did nothing. Upkeep never fails a caller,
 * and data never depends on it. close() cancels a run in progress rather than wait for it.
 *
 * Only long-lived stores count far enough: `baton up` and in-process workers. A script calling
 * the CLI once per job opens a store per call and leaves the queue to autovacuum.
 */
import pg from 'pg';
import { setTimeout as delay } from 'node:timers/promises';

const VACUUM_QUEUE = 'VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) jobs';

export interface UpkeepPolicy {
  /** Jobs taken from the queue between two runs. */
  readonly claims: number;
  /** The largest share of the time the runs may take, in (0, 1]. */
  readonly share: number;
  /** The wait after a failed run, in ms. */
  readonly failedWaitMs: number;
  /** A run not answered by then is given up (a silent network), in ms. */
  readonly runTimeoutMs: number;
}

const UPKEEP_DEFAULT: UpkeepPolicy = {
  claims: 2_000,
  share: 0.05,
  failedWaitMs: 60_000,
  runTimeoutMs: 600_000,
};

/** How long close() waits for a cancelled run to answer before leaving it to its timeout. */
const CLOSE_WAIT_MS = 2_000;

/** When to run: pure, on a clock passed in. */
export class UpkeepSchedule {
  private taken = 0;
  private running = false;
  private notBefore = 0;

  constructor(private readonly policy: UpkeepPolicy) {}

  /** Counts `n` jobs taken at `nowMs`; true when a run should start now (it is then running). */
  took(count: number, nowMs: number): boolean {
    this.taken += count;
    if (this.running || this.taken < this.policy.claims || nowMs < this.notBefore) return false;
    this.running = true;
    this.taken = 0;
    return true;
  }

  /** A run that started at `startMs` ended at `endMs`, well or not. */
  ended(startMs: number, endMs: number, ok: boolean): void {
    this.running = false;
    const took = Math.max(0, endMs - startMs);
    this.notBefore = ok ? endMs + took * (1 / this.policy.share - 1) : endMs + this.policy.failedWaitMs;
  }
}

export interface QueueUpkeep {
  /** Counts jobs this store took from the queue, and starts a run when one is due. */
  readonly took: (count: number) => void;
  /** Cancels a run in progress (`cancel` gets its backend's pid), then ends the upkeep connection. */
  close(cancel: (pid: number) => Promise<unknown>): Promise<void>;
}

/** `statement` is the run's SQL: VACUUM_QUEUE, or in a test a statement that takes its time. */
export function queueUpkeep(
  config: pg.PoolConfig,
  policy: UpkeepPolicy = UPKEEP_DEFAULT,
  statement: string = VACUUM_QUEUE,
): QueueUpkeep {
  const schedule = new UpkeepSchedule(policy);
  let pool: pg.Pool | null = null;
  let pid: number | null = null;
  let current: Promise<void> | null = null;
  let closed = false;
  const run = (): Promise<void> => {
    if (pool === null) {
      // Its own connection, with a timeout of its own: a big table takes a while.
      pool = new pg.Pool({
        ...config,
        max: 1,
        idleTimeoutMillis: 10_000,
        query_timeout: policy.runTimeoutMs,
      });
      pool.on('error', () => {});
      // The backend to cancel on close; forgotten with its connection, so no other gets cancelled.
      pool.on('connect', (client) => {
        pid = (client as unknown as { processID: number | null }).processID;
      });
      pool.on('remove', () => {
        pid = null;
      });
    }
    const start = performance.now();
    return pool.query(statement).then(
      () => schedule.ended(start, performance.now(), true),
      () => schedule.ended(start, performance.now(), false),
    );
  };
  return {
    took: (count) => {
      if (count <= 0 || closed || !schedule.took(count, performance.now())) return;
      current = run().finally(() => {
        current = null;
      });
    },
    close: async (cancel) => {
      closed = true;
      const running = current;
      if (running !== null) {
        if (pid !== null) await cancel(pid).catch(() => undefined);
        const timer = new AbortController();
        await Promise.race([
          running,
          delay(CLOSE_WAIT_MS, undefined, { signal: timer.signal }).catch(() => {}),
        ]);
        timer.abort();
      }
      // A run still not answered (a silent network) ends with its timeout; close() does not wait.
      const ended = pool?.end().catch(() => undefined);
      if (current === null) await ended;
    },
  };
}
