/**
 * What the conformance suite needs from an engine: a fresh, empty database per test, a way to
 * open a second store on it (another "process" from the database's point of view), and raw SQL
 * for the cases that must bypass the store to prove a constraint.
 */
import type { Store } from '../store.js';

export interface RawSql {
  /** Runs one statement; `?` placeholders on SQLite, `$1` on PostgreSQL. */
  exec(sql: string, params?: readonly unknown[]): Promise<readonly Record<string, unknown>[]>;
  close(): Promise<void>;
}

export interface Fixture {
  readonly store: Store;
  readonly url: string;
  readonly raw: RawSql;
  /** Placeholder syntax for raw SQL: `?` or `$n`. */
  readonly param: (n: number) => string;
  readonly openAnother: () => Promise<Store>;
  /**
   * Another store on the same database whose clock is the shared test clock (test-switches.ts):
   * the database's clock plus the offset moveClock sets. Cases that move time do everything
   * through it, so every step is judged on the same moved clock.
   */
  readonly clocked: () => Promise<Store>;
  /** Moves the shared test clock forward by this many milliseconds (instead of sleeping). */
  readonly moveClock: (ms: number) => Promise<void>;
  readonly close: () => Promise<void>;
}

export interface Harness {
  readonly name: string;
  fresh(): Promise<Fixture>;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs a test body against a fresh fixture and always cleans up. */
export async function withFixture(h: Harness, body: (f: Fixture) => Promise<void>): Promise<void> {
  const f = await h.fresh();
  try {
    await body(f);
  } finally {
    await f.close();
  }
}

export async function givenSession(store: Store, host = 'host-a', kind: 'agent' | 'human' = 'agent') {
  return store.sessions.start({ kind, host, pid: 4242 });
}

export async function givenTask(store: Store, key = 'github:acme/api#1246', priority = 100) {
  return store.tasks.add({ key, title: `work on ${key}`, priority });
}
