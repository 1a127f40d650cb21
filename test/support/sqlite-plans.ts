/**
 * SQLite query plans for the plan tests (src/store/sqlite/*-plan*.test.ts): a migrated database
 * opened read-only, and the steps `EXPLAIN QUERY PLAN` gives for a statement. They assert which
 * index a query reaches, never how fast it runs.
 */
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { sqliteDatabase } from './databases.js';

/** A fresh database, migrated as `baton init` leaves it, opened read-only. */
export async function migratedReadOnly(): Promise<Database.Database> {
  const path = await sqliteDatabase().fresh();
  await openSqliteStore({ path }).close();
  return new Database(path, { readonly: true });
}

/** The `detail` of each step of `sql`'s plan, in order. */
export function planSteps(db: Database.Database, sql: string, ...params: unknown[]): string[] {
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
  return rows.map((row) => row.detail);
}
