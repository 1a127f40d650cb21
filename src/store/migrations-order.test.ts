/**
 * The migrations' numbers (docs/decisions/0042-tests-under-load.md). A database reads as the
 * newest version with every listed one below it recorded (schema-version.ts, decision 0043), and
 * the runner applies what is missing in list order: a migration listed after a higher one, or
 * numbered apart on the two engines, would run out of order or name two changes. Helpers work in
 * parallel clones, and a merge once landed 0036 before 0035. So each engine's list must be in
 * order, with no number skipped but the historical ones below; every file in an engine's
 * migrations folder must be in its list under its file's number and name; and a number both
 * engines use must name the same change on both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MIGRATIONS as POSTGRES } from './postgres/migrations/index.js';
import { MIGRATIONS as SQLITE } from './sqlite/migrations/index.js';

type Engine = 'sqlite' | 'postgres';
interface Numbered {
  readonly version: number;
  readonly name: string;
}

/**
 * Numbers an engine skips, each for a reason in its history. A new migration for one engine only
 * adds its number to the other engine's list here, on purpose; a number listed here that the
 * engine does use fails too, so the list stays exact.
 */
const SKIPPED: Readonly<Record<Engine, Readonly<Record<number, string>>>> = {
  sqlite: {
    8: 'claim-batch: a PostgreSQL function (SKIP LOCKED take); SQLite has one writer',
    19: 'used by neither engine: no migration ever landed under 19',
    20: 'take-by-key: the PostgreSQL take function read by key',
    24: 'placement-wake: a PostgreSQL NOTIFY trigger',
    25: 'outbox-github-jobs: a PostgreSQL statement trigger',
    26: "hand-off: PostgreSQL's number for SQLite's 0023",
    29: 'leaves-uncompressed: a PostgreSQL storage setting',
  },
  postgres: {
    16: 'host-load-covering: SQLite only; PostgreSQL needed no index (decision 0016)',
    19: 'used by neither engine: no migration ever landed under 19',
  },
};

/**
 * Numbers both engines use for different changes: landed before the rule above was kept (the
 * engines' numbers had drifted apart by then; hand-off is SQLite's 23 and PostgreSQL's 26).
 */
const NAMED_APART: Readonly<Record<number, { sqlite: string; postgres: string }>> = {
  22: { sqlite: 'quiet-start', postgres: 'take-from-one-rule' },
  23: { sqlite: 'hand-off', postgres: 'outbox-per-statement' },
};

const LISTS: Readonly<Record<Engine, readonly Numbered[]>> = { sqlite: SQLITE, postgres: POSTGRES };

/** What is wrong with one engine's order: a number out of order, skipped, or skipped by mistake. */
function orderFaults(engine: Engine, list: readonly Numbered[]): string[] {
  const faults: string[] = [];
  const skipped = SKIPPED[engine];
  let previous = 0;
  for (const { version, name } of list) {
    if (version <= previous) faults.push(`${engine}: ${version} ${name} is listed after ${previous}`);
    for (let gap = previous + 1; gap < version; gap++) {
      if (skipped[gap] === undefined) faults.push(`${engine}: ${gap} is skipped (before ${version} ${name})`);
    }
    if (skipped[version] !== undefined) faults.push(`${engine}: ${version} is used, yet listed as skipped`);
    previous = Math.max(previous, version);
  }
  return faults;
}

/** Numbers both engines use, named differently, outside the historical ones. */
function nameFaults(sqlite: readonly Numbered[], postgres: readonly Numbered[]): string[] {
  const faults: string[] = [];
  for (const mine of sqlite) {
    const theirs = postgres.find((other) => other.version === mine.version);
    if (theirs === undefined) continue;
    const apart = NAMED_APART[mine.version];
    const expected = apart === undefined ? mine.name : apart.postgres;
    const mineExpected = apart === undefined ? mine.name : apart.sqlite;
    if (theirs.name !== expected || mine.name !== mineExpected) {
      faults.push(`${mine.version}: sqlite ${mine.name}, postgres ${theirs.name}`);
    }
  }
  return faults;
}

test('each engine lists its migrations in order, skipping only the numbers its history skips', () => {
  for (const engine of ['sqlite', 'postgres'] as const) {
    assert.deepEqual(orderFaults(engine, LISTS[engine]), []);
  }
});

test('a number both engines use names the same migration on both, but for the historical two', () => {
  assert.deepEqual(nameFaults(SQLITE, POSTGRES), []);
  for (const version of Object.keys(NAMED_APART).map(Number)) {
    const both = [SQLITE, POSTGRES].map((list) => list.some((m) => m.version === version));
    assert.deepEqual(both, [true, true], `${version} is listed as named apart: both engines use it`);
  }
});

test("every migration file is in its engine's list, under its file's number and name", () => {
  for (const engine of ['sqlite', 'postgres'] as const) {
    const folder = fileURLToPath(new URL(`./${engine}/migrations/`, import.meta.url));
    const files = readdirSync(folder)
      .map((file) => /^(\d{4})-(.+)\.js$/.exec(file))
      .flatMap((match) => (match === null ? [] : [`${Number(match[1])} ${match[2]}`]));
    const listed = LISTS[engine].map(({ version, name }) => `${version} ${name}`);
    assert.deepEqual([...listed].sort(), files.sort(), engine);
  }
});

test('the checks catch a merge that lists 36 before 35, a skipped number and a number named apart', () => {
  const swapped: Numbered[] = [...SQLITE];
  const at = swapped.findIndex((m) => m.version === 35);
  [swapped[at], swapped[at + 1]] = [swapped[at + 1] as Numbered, swapped[at] as Numbered];
  assert.match(orderFaults('sqlite', swapped).join('\n'), /sqlite: 35 job-retention is listed after 36/);
  const gap = POSTGRES.filter((m) => m.version !== 35);
  assert.deepEqual(orderFaults('postgres', gap), ['postgres: 35 is skipped (before 36 host-time-limit)']);
  const renamed = POSTGRES.map((m) => (m.version === 37 ? { ...m, name: 'other' } : m));
  assert.deepEqual(nameFaults(SQLITE, renamed), ['37: sqlite stats-marks, postgres other']);
});
