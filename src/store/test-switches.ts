/**
 * TEST-ONLY switches for the fault-injection suite (test/chaos/) and for tests that move time.
 * Never set them in a real deployment: they exist so the checkers can be shown to fail when the
 * guarantee they check is removed (the negative control), so a write transaction can be held
 * open to be killed, and so a test can move the database clock instead of sleeping. Asking for
 * any of them throws unless the environment says BATON_UNSAFE_TEST_SWITCHES=1.
 *
 * The shared clock: every store opened with it on one database reads the database clock plus an
 * offset kept in that database (table baton_test_clock, made by the first such store), so a test
 * moves the clock of every process at once, `baton up` and CLI calls included, with
 * moveDatabaseClock (test/support/clock.ts) or a Fixture's moveClock. A process asks for it with
 * the option, or with BATON_TEST_CLOCK=shared in its environment.
 */
import { InvalidInputError } from '../core/errors.js';
import type { Store } from './store.js';

export const UNSAFE_ENV = 'BATON_UNSAFE_TEST_SWITCHES';
/** `shared`: the process's stores use the shared test clock (honoured only with UNSAFE_ENV=1). */
export const TEST_CLOCK_ENV = 'BATON_TEST_CLOCK';

/** The table that holds the shared clock's offset, in milliseconds, one row. */
export const CLOCK_TABLE = 'baton_test_clock';
export const CLOCK_TABLE_SQL = `CREATE TABLE IF NOT EXISTS ${CLOCK_TABLE} (
  id INTEGER PRIMARY KEY CHECK (id = 1), offset_ms BIGINT NOT NULL)`;
/** The offset as an SQL expression (0 until a test moves the clock); both engines read it so. */
export const CLOCK_OFFSET = `coalesce((SELECT offset_ms FROM ${CLOCK_TABLE} WHERE id = 1), 0)`;
/** Moves the shared clock forward by a number of milliseconds (a parameter: `?` or `$1`). */
export const moveClockSql = (param: string): string =>
  `INSERT INTO ${CLOCK_TABLE} (id, offset_ms) VALUES (1, ${param})
   ON CONFLICT (id) DO UPDATE SET offset_ms = ${CLOCK_TABLE}.offset_ms + excluded.offset_ms`;

export interface OpenOptions {
  /**
   * TEST ONLY, the negative control: effects.record stops checking (session, epoch) and the
   * session's liveness, and sessions.heartbeat stops telling a holder it was fenced off.
   */
  readonly unsafeDisableFencing?: boolean | undefined;
  /**
   * TEST ONLY, SQLite: called inside effects.record's write transaction after the insert, so a
   * test can hold BEGIN IMMEDIATE open and kill the process inside it.
   */
  readonly unsafeInsideEffectWrite?: (() => void) | undefined;
  /** TEST ONLY: the database clock reads the shared offset a test moves (see above). */
  readonly unsafeSharedClock?: boolean | undefined;
}

/** What an engine needs to know; the defaults are the only values production ever sees. */
export interface TestSwitches {
  readonly fencing: boolean;
  readonly insideEffectWrite: (() => void) | null;
  readonly sharedClock: boolean;
}

export const SAFE: TestSwitches = { fencing: true, insideEffectWrite: null, sharedClock: false };

export function testSwitches(options: OpenOptions): TestSwitches {
  const fencing = options.unsafeDisableFencing !== true;
  const insideEffectWrite = options.unsafeInsideEffectWrite ?? null;
  const sharedClock = options.unsafeSharedClock === true || process.env[TEST_CLOCK_ENV] === 'shared';
  if (fencing && insideEffectWrite === null && !sharedClock) return SAFE;
  if (process.env[UNSAFE_ENV] !== '1') {
    throw new InvalidInputError(
      'unsafe test switches were asked for outside a test',
      `they disable safety checks or move the clock; only tests set ${UNSAFE_ENV}=1`,
    );
  }
  return { fencing, insideEffectWrite, sharedClock };
}

/** With fencing off, a heartbeat naming a claim that is gone still answers ok. */
export function applySwitches(store: Store, switches: TestSwitches): Store {
  if (switches.fencing) return store;
  const heartbeat = store.sessions.heartbeat.bind(store.sessions);
  return {
    ...store,
    sessions: {
      ...store.sessions,
      heartbeat: async (params) => {
        await heartbeat(params);
        return { ok: true };
      },
    },
  };
}
