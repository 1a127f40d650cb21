/**
 * What the conformance suite needs from an engine: a fresh, empty database per test, a way to
 * open a second store on it (another "process" from the database's point of view), and raw SQL
 * for the cases that must bypass the store to prove a constraint.
 */
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import type { Waiter } from '../wakeups.js';

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
  readonly param: (position: number) => string;
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

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How many cases hold a fixture at once (BATON_TEST_STORE_CONCURRENCY=n to change it): four.
 * Each has a database of its own, so none sees another's rows, and a case spends most of its time
 * waiting on the database (a round trip, a commit's flush, a LISTEN wake-up, a lock wait), not on
 * this process: one at a time, the suite left the test process and the server mostly idle.
 */
function fixturesAtOnce(): number {
  const concurrency = Number(process.env['BATON_TEST_STORE_CONCURRENCY'] ?? '4');
  return Number.isInteger(concurrency) && concurrency >= 1 ? concurrency : 4;
}

const slots = { free: fixturesAtOnce(), waiting: [] as (() => void)[] };

async function takeSlot(): Promise<void> {
  if (slots.free > 0) {
    slots.free -= 1;
    return;
  }
  await new Promise<void>((resolve) => slots.waiting.push(resolve));
}

function giveSlot(): void {
  const next = slots.waiting.shift();
  if (next === undefined) slots.free += 1;
  else next();
}

/** Runs a test body against a fresh fixture and always cleans up; a few at a time (above). */
export async function withFixture(
  harness: Harness,
  body: (fixture: Fixture) => Promise<void>,
): Promise<void> {
  await takeSlot();
  try {
    const fixture = await harness.fresh();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  } finally {
    giveSlot();
  }
}

/** The types of a job's ledger rows, oldest first. */
export async function ledgerTypes(store: Store, jobId: number): Promise<string[]> {
  const rows = await store.audit.list({ jobId });
  return [...rows].sort((left, right) => left.id - right.id).map((row) => row.type);
}

export async function givenSession(store: Store, host = 'host-a', kind: 'agent' | 'human' = 'agent') {
  return store.sessions.start({ kind, host, pid: 4242 });
}

export async function givenTask(store: Store, key = 'github:acme/api#1246', priority = 100) {
  return store.tasks.add({ key, title: `work on ${key}`, priority });
}

/**
 * Waits until the latch stays shut for `quietMs`, so that the wake a test then expects comes from
 * its own write: wakes from earlier writes (and the LISTEN start) may still be on their way, as
 * NOTIFY is delivered after the commit, so one wait is not enough to drain them.
 */
export async function settle(waiter: Waiter, quietMs = 300): Promise<void> {
  for (let index = 0; index < 50; index++) {
    const t0 = performance.now();
    await waiter.wait(quietMs);
    if (performance.now() - t0 >= quietMs - 5) return;
  }
  assert.fail('the waiter never went quiet');
}
