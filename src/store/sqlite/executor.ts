/**
 * Runs work in BEGIN IMMEDIATE transactions, retrying while the database is busy so that a busy
 * database never surfaces as a failed operation, and caches prepared statements.
 *
 * better-sqlite3 is synchronous: SQLite's busy handler sleeps on the event loop. One attempt waits
 * at most `busy_timeout` (short, sqlite-store.ts); a port call (fromSync) that still finds the
 * file locked waits out the lock asynchronously, so that a lock held for seconds by another
 * program (a `BEGIN EXCLUSIVE` in a shell) does not freeze the daemon: its RAM sampling, OOM kills
 * and trust windows keep running meanwhile (issue 14, item 8). While one call waits out a lock,
 * the others queue behind it instead of each knocking (and blocking the loop) in turn.
 */
import type Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  corruptDatabase,
  diskFullError,
  isCorrupt,
  isDiskFull,
  StoreUnavailableError,
} from '../../core/errors.js';
import { CLOCK_OFFSET } from '../test-switches.js';
import { movedWriteRefusal } from './moved.js';
import { TickBatcher } from './tick-batcher.js';
import { Turn } from './turn.js';

/** How long a call keeps retrying a locked database before it reports the store unavailable. */
const BUSY_GIVE_UP_MS = 200_000;
const PAUSE_FIRST_MS = 5;
const PAUSE_MAX_MS = 250;
/** How long a turn-taking write (writeInTurn) pauses between its tries while the file is locked. */
const TURN_PAUSE_MS = 1;
/** How long a call waits, without its pause growing, while another process has the turn (turn.ts). */
const TURN_GIVEN_PAUSE_MS = 2;

/** Thrown out of an attempt that found the file locked, to the asynchronous retry around it. */
class LockedNow extends Error {}
/** Thrown out of an attempt that gives way to another process's turn at the lock (turn.ts). */
class TurnGiven extends LockedNow {}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

function stayedLocked(): StoreUnavailableError {
  return new StoreUnavailableError(
    'the SQLite database stayed locked by other processes',
    'retry, or look for a process that holds a long transaction on the file',
  );
}

export class SqliteExecutor {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly nowStatement: Database.Statement;
  /** Inside a port call that retries asynchronously, before any of its writes committed. */
  private retriesLater = false;
  /** While a call waits out a lock, the others wait behind it; the pause grows while it lasts. */
  private waiting: Promise<void> | null = null;
  private pauseMs = PAUSE_FIRST_MS;
  private readonly turn: Turn;

  /** `sharedClock`: TEST ONLY (test-switches.ts), the clock adds the offset tests move. */
  constructor(
    readonly db: Database.Database,
    sharedClock = false,
  ) {
    // julianday() keeps milliseconds on every SQLite version; unixepoch('subsec') is NULL before 3.42.
    const now = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
    this.nowStatement = db.prepare(
      sharedClock ? `SELECT ${now} + ${CLOCK_OFFSET} AS now` : `SELECT ${now} AS now`,
    );
    this.turn = new Turn(db.memory || db.name === '' ? null : `${db.name}-turn`);
  }

  /** The database clock, in milliseconds since the Unix epoch. */
  now(): number {
    return (this.nowStatement.get() as { now: number }).now;
  }

  prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** Write transactions this executor committed (or tried): wake-up polls look again after one. */
  writes = 0;

  private group: TickBatcher<() => unknown, unknown> | null = null;

  /**
   * A durable write that commits together with the others sent in the same turn of the event
   * loop (tick-batcher.ts: one BEGIN IMMEDIATE, a savepoint each, one fsync; each still succeeds
   * or fails alone), for port calls a caller sends together: a run's job start and its agent's
   * session (daemon/run-start.ts) cost one commit, not two. A lone call commits one turn later.
   */
  grouped<T>(work: () => T): Promise<T> {
    this.group ??= new TickBatcher(this, (queued: () => unknown) => queued());
    return this.group.submit(work) as Promise<T>;
  }

  /** One write transaction: the write lock is taken before the first read. */
  write<T>(work: () => T): T {
    // A call that can still wait gives way to another process's turn (turn.ts) before it locks.
    if (this.retriesLater && !this.db.inTransaction && this.turn.askedByAnother()) throw new TurnGiven();
    this.writes++;
    const result = this.retrying(() => this.db.transaction(work).immediate());
    // A call that committed a write must not be run again: later busy waits in it stay synchronous.
    this.retriesLater = false;
    return result;
  }

  /**
   * A write that must get its turn under a steady write load from other processes: the sealer's
   * append (ledger.ts). Through `later` it tried for the lock a few times every 275 ms (the pause
   * grows while the file stays locked and shrinks only when a call of this process succeeds) and
   * lost it to writers that take it back between their commits (decision 0011, h-ledger: appends
   * waited 1.6-5 s, or for as long as the writers wrote). This one asks for its turn (turn.ts) and
   * tries every millisecond, each try without SQLite's blocking busy wait (busy_timeout 0 for it):
   * the event loop is never held, whoever holds the lock and for however long.
   */
  async writeInTurn<T>(work: () => T): Promise<T> {
    const giveUpAt = Date.now() + BUSY_GIVE_UP_MS;
    // One write transaction asked for, however many tries it takes (as write() counts).
    this.writes++;
    const busyTimeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    const transaction = this.db.transaction(work);
    try {
      for (;;) {
        this.db.pragma('busy_timeout = 0');
        try {
          return transaction.immediate();
        } catch (error) {
          // Busy before the commit: the transaction rolled back, nothing of it happened.
          if (!isBusy(error)) throw error;
        } finally {
          this.db.pragma(`busy_timeout = ${busyTimeout}`);
        }
        if (Date.now() >= giveUpAt) throw stayedLocked();
        this.turn.ask();
        await sleep(TURN_PAUSE_MS);
      }
    } finally {
      this.turn.done();
    }
  }

  /**
   * A write that is only worth making if the lock is free now (stats' persisted counts,
   * stats-kept.ts): tried once without SQLite's busy wait, and not counted in `writes` (nothing
   * waits on it). False when the file was locked or a transaction is open: nothing was written.
   */
  writeIfFree(work: () => void): boolean {
    if (this.db.inTransaction) return false;
    const busyTimeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      this.db.transaction(work).immediate();
      return true;
    } catch (error) {
      if (isBusy(error)) return false;
      throw error;
    } finally {
      this.db.pragma(`busy_timeout = ${busyTimeout}`);
    }
  }

  /**
   * A write whose loss in a power cut harms no one (heartbeats: after one, every session of this
   * host is dead anyway), committed without its own fsync (`synchronous = NORMAL`). In WAL mode the
   * next durable commit syncs the log up to and past it, and a process crash loses nothing.
   */
  writeNotDurable<T>(work: () => T): T {
    this.db.pragma('synchronous = NORMAL');
    try {
      return this.write(work);
    } finally {
      this.db.pragma('synchronous = FULL');
    }
  }

  /** A read, retried while a checkpoint or writer keeps the database busy. */
  read<T>(work: () => T): T {
    return this.retrying(work);
  }

  /**
   * Starts a port call, and starts it again after an asynchronous pause whenever its synchronous
   * part found the database locked before committing anything (nothing of it happened, so it may
   * run again). Later parts of an asynchronous call (after an await) retry synchronously.
   */
  async later<T>(call: () => Promise<T>): Promise<T> {
    const giveUpAt = Date.now() + BUSY_GIVE_UP_MS;
    for (;;) {
      while (this.waiting !== null) await this.waiting;
      let given = false;
      const outer = this.retriesLater;
      this.retriesLater = true;
      let pending: Promise<T>;
      try {
        pending = new Promise<T>((resolve) => resolve(call()));
      } finally {
        this.retriesLater = outer;
      }
      try {
        const result = await pending;
        this.pauseMs = PAUSE_FIRST_MS;
        return result;
      } catch (error) {
        if (!(error instanceof LockedNow)) throw this.named(error);
        given = error instanceof TurnGiven;
      }
      if (Date.now() >= giveUpAt) throw stayedLocked();
      const pause = given ? TURN_GIVEN_PAUSE_MS : this.pauseMs;
      if (!given) this.pauseMs = Math.min(PAUSE_MAX_MS, pause * 2);
      this.waiting ??= sleep(pause).then(() => {
        this.waiting = null;
      });
    }
  }

  /**
   * A damaged file, a full disk or a file `baton db copy` moved since this process opened it, met
   * by a call after the open, named with the file (issue 14, item 12): the driver's error alone
   * says neither which file nor what to do. The driver's error stays its cause, so isCorrupt and
   * isDiskFull still know it.
   */
  private named(error: unknown): unknown {
    if (!(error instanceof Error)) return error;
    if (isCorrupt(error)) return corruptDatabase(this.db.name, error);
    const moved = movedWriteRefusal(this.db.name, error);
    if (moved !== null) return moved;
    if (!isDiskFull(error)) return error;
    const full = diskFullError(`cannot write SQLite database ${this.db.name}`, error.message);
    full.cause = error;
    return full;
  }

  /** Wraps every method of every group of a store in `later`. */
  retryingLater<S extends object>(store: S): S {
    const out: Record<string, unknown> = {};
    for (const [name, group] of Object.entries(store)) {
      if (typeof group !== 'object' || group === null || name === 'capabilities') {
        out[name] = group;
        continue;
      }
      const wrapped: Record<string, unknown> = {};
      for (const [method, fn] of Object.entries(group as Record<string, unknown>)) {
        wrapped[method] =
          typeof fn === 'function'
            ? (...args: unknown[]): Promise<unknown> =>
                this.later(() => (fn as (...callArgs: unknown[]) => Promise<unknown>)(...args))
            : fn;
      }
      out[name] = wrapped;
    }
    return out as S;
  }

  private retrying<T>(work: () => T): T {
    const giveUpAt = Date.now() + BUSY_GIVE_UP_MS;
    for (;;) {
      try {
        return work();
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (this.retriesLater && !this.db.inTransaction) throw new LockedNow();
        if (Date.now() >= giveUpAt) throw stayedLocked();
      }
    }
  }
}

/** A port group written synchronously: each method returns its value instead of a promise. */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K];
};

/**
 * Lifts a synchronous group to the port's promise-returning shape. better-sqlite3 throws
 * synchronously; the port promises rejections, so each method's throw becomes its rejection.
 * The engine's one way to fit the async port: methods are written synchronously (Sync<T>) and
 * lifted here, never wrapped one by one in Promise.resolve (which lets a throw escape as a
 * synchronous exception).
 */
export function fromSync<T extends object>(group: Sync<T>): T {
  const lifted: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(group)) {
    lifted[name] = (...args: unknown[]): Promise<unknown> =>
      new Promise((resolve) => resolve((fn as (...callArgs: unknown[]) => unknown)(...args)));
  }
  return lifted as T;
}
