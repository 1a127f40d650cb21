/**
 * A migration that rebuilds a table (SQLite cannot widen a CHECK in place) must recreate every
 * index and trigger the earlier migrations made on it. Merged branches each add their own, so a
 * rebuild written against an older schema silently drops a newer one: 0012 dropped 0009's
 * jobs_active_by_host and 0011's jobs_command_fixed this way. This reads the names every
 * migration creates and drops, and checks the migrated schema has exactly the survivors.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { allDatabases, type TestDatabase } from '../../test/support/databases.js';
import { rawSql } from '../../test/support/raw-sql.js';
import { openStore } from './open.js';
import { MIGRATIONS as PG_MIGRATIONS } from './postgres/migrations/index.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/migrations/index.js';

const CREATE = /\bCREATE\s+(?:UNIQUE\s+)?(INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?("?\w+"?)/gi;
const DROP = /\bDROP\s+(INDEX|TRIGGER)\s+(?:IF\s+EXISTS\s+)?("?\w+"?)/gi;

/** `index name` and `trigger name` that the migrations leave behind, in order of application. */
function survivors(migrations: readonly { readonly sql: string }[]): Set<string> {
  const names = new Set<string>();
  for (const { sql } of migrations) {
    const events = [
      ...[...sql.matchAll(CREATE)].map((m) => ({ at: m.index, add: true, m })),
      ...[...sql.matchAll(DROP)].map((m) => ({ at: m.index, add: false, m })),
    ].sort((a, b) => a.at - b.at);
    for (const { add, m } of events) {
      const name = `${(m[1] ?? '').toLowerCase()} ${(m[2] ?? '').replaceAll('"', '')}`;
      if (add) names.add(name);
      else names.delete(name);
    }
  }
  return names;
}

const SCHEMA_SQL = {
  sqlite: `SELECT type || ' ' || name AS name FROM sqlite_master
           WHERE type IN ('index', 'trigger') AND name NOT LIKE 'sqlite_%'`,
  postgres: `SELECT 'index ' || indexname AS name FROM pg_indexes WHERE schemaname = current_schema()
               AND indexname NOT IN (SELECT conname FROM pg_constraint)
             UNION ALL
             SELECT 'trigger ' || tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
             WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace`,
} as const;

async function actual(db: TestDatabase, url: string): Promise<Set<string>> {
  const raw = await rawSql(db, url);
  try {
    const rows = await raw.exec(SCHEMA_SQL[db.engine]);
    return new Set(rows.map((r) => String(r['name'])));
  } finally {
    await raw.close();
  }
}

for (const db of allDatabases()) {
  describe(`migrations on ${db.name}`, () => {
    test('leave every index and trigger a migration made, unless a later one dropped it by name', async () => {
      const url = await db.empty();
      await (await openStore(url)).close();
      const expected = survivors(db.engine === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS);
      const found = await actual(db, url);
      const missing = [...expected].filter((name) => !found.has(name));
      assert.deepEqual(missing, [], `dropped without a DROP naming them: ${missing.join(', ')}`);
    });
  });
}
