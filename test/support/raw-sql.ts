/** Raw SQL against a test database, for the few cases that must bypass the store (constraints). */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { TestDatabase } from './databases.js';

export interface RawSql {
  /** Runs one statement; `?` placeholders for SQLite, `$1` for PostgreSQL. */
  exec(sql: string, params?: readonly unknown[]): Promise<readonly Record<string, unknown>[]>;
  close(): Promise<void>;
}

export async function rawSql(db: TestDatabase, url: string): Promise<RawSql> {
  if (db.engine === 'sqlite') {
    const conn = new Database(url);
    conn.pragma('busy_timeout = 5000');
    return {
      exec: async (sql, params = []) => {
        await Promise.resolve();
        const statement = conn.prepare(sql);
        if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
        statement.run(...params);
        return [];
      },
      close: () => Promise.resolve(void conn.close()),
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    exec: async (sql, params = []) =>
      (await client.query(sql, [...params])).rows as Record<string, unknown>[],
    close: () => client.end(),
  };
}
