/**
 * Fresh databases for tests: a temp SQLite file, or a new database on each PostgreSQL server the
 * test runner provides (BATON_TEST_PG_SERVERS). Every test gets its own, so tests never share
 * mutable state.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestServer {
  readonly name: string;
  readonly url: string;
}

export interface TestDatabase {
  /** What the test names the engine: `sqlite`, `postgres (throwaway)` … */
  readonly name: string;
  readonly engine: 'sqlite' | 'postgres';
  /** Mints a new, empty database and returns the URL (a path for SQLite). */
  fresh(): Promise<string>;
}

export function postgresServers(): readonly TestServer[] {
  const raw = process.env.BATON_TEST_PG_SERVERS;
  if (raw === undefined || raw === '') {
    throw new Error('BATON_TEST_PG_SERVERS is not set: run the tests with `npm test`');
  }
  return JSON.parse(raw) as TestServer[];
}

export function sqliteDatabase(): TestDatabase {
  return {
    name: 'sqlite',
    engine: 'sqlite',
    fresh: () => Promise.resolve(join(mkdtempSync(join(tmpdir(), 'baton-test-')), 'baton.db')),
  };
}

export function postgresDatabase(server: TestServer): TestDatabase {
  return {
    name: server.name,
    engine: 'postgres',
    fresh: async () => {
      const name = `baton_t_${randomBytes(6).toString('hex')}`;
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      const url = new URL(server.url);
      url.pathname = `/${name}`;
      return url.toString();
    },
  };
}

/** SQLite and every PostgreSQL server: for the conformance suite. */
export function allDatabases(): readonly TestDatabase[] {
  return [sqliteDatabase(), ...postgresServers().map(postgresDatabase)];
}

/** SQLite and the first PostgreSQL server: for slower end-to-end tests. */
export function bothEngines(): readonly TestDatabase[] {
  const first = postgresServers()[0];
  return first === undefined ? [sqliteDatabase()] : [sqliteDatabase(), postgresDatabase(first)];
}
