/**
 * Moves the shared test clock of a database (src/store/test-switches.ts): every store opened on
 * it with the shared clock, in any process (`baton up` and CLI calls started with
 * BATON_TEST_CLOCK=shared and BATON_UNSAFE_TEST_SWITCHES=1), reads the database clock plus this
 * offset, so a test moves time for all of them at once instead of sleeping.
 */
import { CLOCK_TABLE_SQL, TEST_CLOCK_ENV, UNSAFE_ENV, moveClockSql } from '../../src/store/test-switches.js';
import { rawSql, type RawSql } from './raw-sql.js';
import type { TestDatabase } from './databases.js';

export async function moveDatabaseClock(
  raw: RawSql,
  engine: 'sqlite' | 'postgres',
  ms: number,
): Promise<void> {
  await raw.exec(CLOCK_TABLE_SQL);
  await raw.exec(moveClockSql(engine === 'sqlite' ? '?' : '$1'), [ms]);
}

/** The same, opening a connection of its own. */
export async function moveClockOf(db: TestDatabase, url: string, ms: number): Promise<void> {
  const raw = await rawSql(db, url);
  try {
    await moveDatabaseClock(raw, db.engine, ms);
  } finally {
    await raw.close();
  }
}

/** The environment a process needs for its stores to read the shared test clock. */
export const SHARED_CLOCK_ENV: Readonly<Record<string, string>> = {
  [UNSAFE_ENV]: '1',
  [TEST_CLOCK_ENV]: 'shared',
};
