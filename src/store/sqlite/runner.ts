/**
 * Runs work in BEGIN IMMEDIATE transactions, retrying while the database is busy so that a busy
 * database never surfaces as a failed operation, and caches prepared statements.
 */
import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../core/errors.js';
import { CLOCK_OFFSET } from '../test-switches.js';

const BUSY_RETRY_MAX = 200;

export class SqliteRunner {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly nowStatement: Database.Statement;

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

  /** Write transactions this runner committed (or tried): wake-up polls look again after one. */
  writes = 0;

  /** One write transaction: the write lock is taken before the first read. */
  write<T>(work: () => T): T {
    this.writes++;
    return this.retrying(() => this.db.transaction(work).immediate());
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

  private retrying<T>(work: () => T): T {
    for (let attempt = 1; ; attempt++) {
      try {
        return work();
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') throw error;
        if (attempt >= BUSY_RETRY_MAX) {
          throw new StoreUnavailableError(
            'the SQLite database stayed locked by other processes',
            'retry, or look for a process that holds a long transaction on the file',
          );
        }
      }
    }
  }
}

/**
 * better-sqlite3 throws synchronously; the port promises rejections. Wrapping every method of a
 * group keeps the engine code free of that ceremony.
 */
export function asyncify<T extends object>(group: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(group)) {
    wrapped[name] = (...args: unknown[]): Promise<unknown> =>
      new Promise((resolve) => resolve((fn as (...a: unknown[]) => unknown)(...args)));
  }
  return wrapped as T;
}

/** A port group written synchronously: each method returns its value instead of a promise. */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K];
};

/** Lifts a synchronous group to the port's promise-returning shape (throws become rejections). */
export function fromSync<T extends object>(group: Sync<T>): T {
  return asyncify(group) as unknown as T;
}
