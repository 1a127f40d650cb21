/**
 * Fresh databases for tests: a temp SQLite file, or a new database on each PostgreSQL server the
 * test runner provides (BATON_TEST_PG_SERVERS). Every test gets its own, so tests never share
 * mutable state. `fresh()` initialises it as `baton init` does (only `baton up` and `baton init`
 * create a database; every other command refuses a missing one); `empty()` leaves it bare, for
 * tests of migrations and of those refusals.
 *
 * Migrating costs more than most tests (about 50 ms on SQLite, 0.5–1 s on PostgreSQL, where the
 * conformance suite alone makes some 200 databases per server). So each test process migrates
 * one template per engine, once, and `fresh()` copies it: the file on SQLite, `CREATE DATABASE
 * … TEMPLATE` on PostgreSQL (a copy of its files, no SQL replayed). A copy is byte for byte what
 * `baton init` leaves, and every test still owns its own database. Migrations themselves are
 * tested on `empty()` databases (db-intent, migrations-keep-objects, the backfill tests).
 *
 * Even a copy costs 0.6–1 s on a loaded PostgreSQL 15, so the conformance suite hands each
 * database back when a case is done (`recycle`): once reset and proved identical to a new copy
 * (pg-recycle.ts), it answers the next `fresh()` of the same source.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateDatabase } from '../../src/store/roles.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { recycle, type RecyclePool } from './pg-recycle.js';

export interface TestServer {
  readonly name: string;
  readonly url: string;
}

export interface TestDatabase {
  /** What the test names the engine: `sqlite`, `postgres (throwaway)` … */
  readonly name: string;
  readonly engine: 'sqlite' | 'postgres';
  /** Mints a new database with Baton's schema, as `baton init` makes it, and returns the URL (a path for SQLite). */
  fresh(): Promise<string>;
  /** Mints a new database without Baton's tables: no file at all for SQLite. */
  empty(): Promise<string>;
  /**
   * Hands back a database from `fresh()` that its test has closed every other connection to, for a
   * later `fresh()` to answer with once it is as new again (pg-recycle.ts); `exec` runs SQL on the
   * test's last connection to it. PostgreSQL only: a SQLite copy is a file copy, cheaper than any
   * reset.
   */
  readonly recycle?: (
    url: string,
    exec: (sql: string) => Promise<readonly Record<string, unknown>[]>,
  ) => Promise<void>;
}

export function postgresServers(): readonly TestServer[] {
  const raw = process.env.BATON_TEST_PG_SERVERS;
  if (raw === undefined || raw === '') {
    throw new Error('BATON_TEST_PG_SERVERS is not set: run the tests with `npm test`');
  }
  return JSON.parse(raw) as TestServer[];
}

const emptySqlite = (): string => join(mkdtempSync(join(tmpdir(), 'baton-test-')), 'baton.db');

/** This process's migrated SQLite file, made on first use and removed when the process exits. */
let sqliteTemplate: Promise<string> | undefined;
function sqliteTemplateFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const path = emptySqlite();
    process.once('exit', () => rmSync(dirname(path), { recursive: true, force: true }));
    await initialised(path);
    // Closing the last connection checkpoints the WAL into the file and removes it.
    if (existsSync(`${path}-wal`)) throw new Error(`the SQLite template kept a WAL file: ${path}-wal`);
    return path;
  })();
  return sqliteTemplate;
}

export function sqliteDatabase(): TestDatabase {
  const empty = (): Promise<string> => Promise.resolve(emptySqlite());
  const fresh = async (): Promise<string> => {
    const template = await sqliteTemplateFile();
    const path = emptySqlite();
    // The copy keeps the template's mode (0600, as `baton init` makes it) in its own 0700 folder.
    copyFileSync(template, path);
    return path;
  };
  return { name: 'sqlite', engine: 'sqlite', empty, fresh };
}

/** A new database's name; the run's id (scripts/run-tests.mjs) lets a run drop only its own. */
function databaseName(): string {
  const run = /^[0-9a-f]{1,16}$/.test(process.env['BATON_TEST_RUN_ID'] ?? '')
    ? `${process.env['BATON_TEST_RUN_ID']}_`
    : '';
  return `baton_t_${run}${randomBytes(6).toString('hex')}`;
}

/** Runs one statement on the server's maintenance database. */
async function onServer(server: TestServer, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrl(server: TestServer, name: string): string {
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * This process's migrated template database on a server, made on first use. Nothing connects to
 * it after the migration (CREATE DATABASE … TEMPLATE needs that); the run drops it with the rest.
 */
const postgresTemplates = new Map<string, Promise<string>>();
function postgresTemplate(server: TestServer): Promise<string> {
  let template = postgresTemplates.get(server.url);
  if (template === undefined) {
    template = (async () => {
      const name = databaseName();
      await onServer(server, `CREATE DATABASE ${name}`);
      await initialised(databaseUrl(server, name));
      return name;
    })();
    postgresTemplates.set(server.url, template);
  }
  return template;
}

export function postgresDatabase(server: TestServer): TestDatabase {
  const make = async (template: string | null): Promise<string> => {
    const name = databaseName();
    await onServer(server, `CREATE DATABASE ${name}${template === null ? '' : ` TEMPLATE ${template}`}`);
    return databaseUrl(server, name);
  };
  // The databases handed back as new (pg-recycle.ts), for this source's `fresh()` only.
  const pool: RecyclePool = { free: [] };
  const copy = async (): Promise<string> => make(await postgresTemplate(server));
  return {
    name: server.name,
    engine: 'postgres',
    empty: () => make(null),
    fresh: async () => pool.free.pop() ?? copy(),
    recycle: async (url, exec) => void (await recycle(pool, url, exec, copy)),
  };
}

/**
 * Hands a database from `db.fresh()` back (`recycle`) through a connection of its own, for tests
 * that keep no raw connection; the test must have closed every other connection to it.
 */
export async function handBack(db: TestDatabase, url: string): Promise<void> {
  if (db.recycle === undefined) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await db.recycle(url, async (sql) => (await client.query(sql)).rows as Record<string, unknown>[]);
  } finally {
    await client.end();
  }
}

/** The database at `url` after what `baton init` does to it. */
export async function initialised(url: string): Promise<string> {
  await migrateDatabase(url, 'create');
  return url;
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

/** A fresh (migrated) database of the first PostgreSQL server, for the tests of one engine. */
export async function freshPostgresUrl(): Promise<string> {
  const server = postgresServers()[0];
  if (server === undefined) throw new Error('no PostgreSQL server for the tests (BATON_TEST_PG_SERVERS)');
  return postgresDatabase(server).fresh();
}

/**
 * A client connected to a fresh database of the first PostgreSQL server, for the tests that read
 * the plans of the engine's statements (claim-plan, fleet-plans); the caller ends it.
 */
export async function freshPostgresClient(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: await freshPostgresUrl() });
  await client.connect();
  return client;
}

/**
 * A fresh database of the first PostgreSQL server, with a client and a store on it, for the tests
 * that look at the engine's SQL beside the store's answers; the caller ends the client and closes
 * the store.
 */
export async function freshPostgresStore(): Promise<{ client: pg.Client; store: Store }> {
  const url = await freshPostgresUrl();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return { client, store: await openStore(url) };
}

/**
 * Fills a fresh PostgreSQL database with `count` open tasks, each with one queued job, oldest
 * first; with `analyze`, statistics taken as a queue's before its first run (nothing claimed).
 */
export async function seedQueue(
  db: Pick<pg.Client, 'query'>,
  count: number,
  analyze: boolean,
): Promise<void> {
  await db.query(
    `INSERT INTO tasks (key, priority, created_at)
     SELECT 'plan-' || g, 100, now() - g * interval '1 millisecond' FROM generate_series(1, $1::int) g`,
    [count],
  );
  await db.query(
    'INSERT INTO jobs (task_id, priority, queued_at, github) SELECT id, priority, created_at, false FROM tasks',
  );
  if (!analyze) return;
  await db.query('ANALYZE tasks');
  await db.query('ANALYZE jobs');
}

/**
 * `url` on a database that does not exist, and `url` with a wrong password, for the refusals
 * (exit 4, exit 5); the second is null when the server lets that login in anyway (trust auth).
 */
export async function refusedUrls(url: string): Promise<{ missing: string; wrongPassword: string | null }> {
  const missing = new URL(url);
  missing.pathname = `/baton_missing_${randomBytes(4).toString('hex')}`;
  const wrong = new URL(url);
  wrong.password = 'not-the-password';
  const probe = new pg.Client({ connectionString: wrong.href });
  const refused = await probe.connect().then(
    () => false,
    () => true,
  );
  await probe.end().catch(() => undefined);
  return { missing: missing.href, wrongPassword: refused ? wrong.href : null };
}
