/**
 * The embedded engine: one SQLite file in WAL mode, shared safely by many processes on one host.
 *
 * Every operation is one `BEGIN IMMEDIATE` transaction. IMMEDIATE takes the write lock before the
 * first read, so the read-check-write inside is atomic: SQLite admits one writer at a time. A
 * plain (deferred) BEGIN would read under a shared lock and then fail with SQLITE_BUSY on the
 * upgrade, which busy_timeout cannot absorb. The database clock here is the host clock read
 * inside the write transaction: SQLite is single-host by construction.
 */
import Database from 'better-sqlite3';
import { closeSync, existsSync, mkdirSync, openSync, statSync, statfsSync } from 'node:fs';
import { keepOutOfGit } from '../../os/state-ignore.js';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  diskFullError,
  InvalidInputError,
  isDiskFull,
  noDatabase,
  NotBatonDatabaseError,
  notADatabase,
  schemaRefusal,
  schemaTooNew,
  StoreUnavailableError,
  type OpenIntent,
} from '../../core/errors.js';
import type { Store } from '../store.js';
import { MIGRATIONS } from './migrations/index.js';
import { sqliteTasks, sqliteSessions } from './tasks-claims.js';
import { sqliteClaims } from './claims.js';
import { sqliteLifecycle, sqliteSettings } from './lifecycle.js';
import { sqliteDependencies } from './dependencies.js';
import type { LifecycleStore } from '../lifecycle-store.js';
import { sqliteJobs } from './jobs.js';
import { sqliteLeases, sqliteAudit } from './leases-audit.js';
import { SqliteExecutor, fromSync } from './executor.js';
import { sqliteHosts } from './hosts.js';
import { sqliteDispatch, sqliteRecovery, type SyncDispatch } from './dispatch.js';
import { sqliteDispatchPass } from './dispatch-pass.js';
import { sqliteWorkspaceGroups } from './workspaces.js';
import { sqliteEffects } from './effects.js';
import { sqliteProgress } from './progress.js';
import { sqliteWakeups } from './wakeups.js';
import { CLOCK_TABLE_SQL, SAFE, type TestSwitches } from '../test-switches.js';
import { sqliteLedger, sqliteReports } from './ledger.js';
import { sqliteObserve } from './observe.js';
import { sqliteRetention } from './retention.js';
import { sqliteTokens } from './tokens.js';
import { sqliteRuns } from './runs.js';
import { RECORDED_SQL, versionSql } from '../schema-version.js';
import { sqliteOutput } from './output.js';
import { sqliteOutputTrim } from './output-trim.js';
import { sqliteGithub } from './github.js';
import { movedMark, movedRefusal } from './moved.js';

export interface SqliteStoreOptions {
  readonly path: string;
  /**
   * How long one attempt waits for the write lock, blocking the event loop, before the call waits
   * out the lock asynchronously (executor.ts) (ms).
   */
  readonly busyTimeoutMs?: number;
  /** Apply migrations up to this version only: for tests of data migrations on an old schema. */
  readonly migrateTo?: number;
  /** What the caller may do to the database (errors.ts); `create` unless said. */
  readonly intent?: OpenIntent;
  /** The connection reads the database through once (openStore's `scan`): a small page cache. */
  readonly scan?: boolean;
  /**
   * Opened read-only, its journal mode left as the file has it (a copy `baton db backup` checks
   * before it names it); with intent `use` only.
   */
  readonly readOnly?: boolean;
  /** TEST ONLY (test-switches.ts); production never sets it. */
  readonly switches?: TestSwitches;
}

/** The schema's version (schema-version.ts): every listed migration up to it recorded. */
const VERSION = versionSql(MIGRATIONS.map((migration) => migration.version));

/** Long enough for another Baton process's transaction (milliseconds), short for the event loop. */
const BUSY_TIMEOUT_MS = 25;

/**
 * The page cache of a connection that reads the database through once (KiB): SQLite's own default.
 * better-sqlite3 builds SQLite with 16 MB, which a pass that reads each page once fills with pages
 * it never reads again (14 MB of `baton audit export`'s peak RSS on a 200k-row ledger, issue 22).
 */
const SCAN_CACHE_KIB = 2000;

export function openSqliteStore(options: SqliteStoreOptions): Store {
  const intent = options.intent ?? 'create';
  const db = openDatabase(options, intent);
  const switches = options.switches ?? SAFE;
  if (switches.sharedClock && options.readOnly !== true) db.exec(CLOCK_TABLE_SQL);
  const exec = new SqliteExecutor(db, switches.sharedClock);
  try {
    // A file `baton db copy` moved is evidence only: read-through opens (scan, read-only) may read it,
    // whatever schema it was left at (it can never be migrated again: its triggers refuse every write,
    // so a newer Baton's `schemaTooOld` advice, `baton db migrate`, would only be refused in turn).
    const readThrough = options.scan === true || options.readOnly === true;
    const mark = movedMark(db);
    if (mark !== null && !readThrough) throw movedRefusal(options.path, mark);
    if (intent === 'use') useAsItIs(exec, options.path, mark !== null);
    else migrate(exec, options.migrateTo ?? Number.MAX_SAFE_INTEGER);
  } catch (error) {
    db.close();
    throw damaged(options.path, error) ?? error;
  }
  const wake = sqliteWakeups(exec);
  return exec.retryingLater<Store>({
    engine: 'sqlite',
    capabilities: { multiHost: false, concurrentReads: false },
    ...fromSync<Pick<Store, 'now' | 'schema' | 'close'>>({
      now: () => exec.read(() => exec.now()),
      schema: () =>
        exec.read(() => ({
          applied: (exec.prepare(VERSION).get() as { v: number | null }).v ?? 0,
          known: Math.max(...MIGRATIONS.map((migration) => migration.version)),
        })),
      close: () => {
        wake.stop();
        db.close();
      },
    }),
    wakeups: wake.wakeups,
    tasks: fromSync(sqliteTasks(exec)),
    sessions: sqliteSessions(exec),
    claims: fromSync(sqliteClaims(exec)),
    jobs: sqliteJobs(exec),
    leases: fromSync(sqliteLeases(exec)),
    audit: fromSync(sqliteAudit(exec)),
    hosts: fromSync(sqliteHosts(exec)),
    dispatch: { ...fromSync<SyncDispatch>(sqliteDispatch(exec)), ...sqliteDispatchPass(exec) },
    recovery: fromSync(sqliteRecovery(exec)),
    ...sqliteWorkspaceGroups(exec),
    effects: sqliteEffects(exec, switches),
    progress: sqliteProgress(exec),
    lifecycle: fromSync<LifecycleStore['lifecycle']>({
      ...sqliteLifecycle(exec),
      ...sqliteDependencies(exec),
    }),
    settings: fromSync(sqliteSettings(exec)),
    ledger: sqliteLedger(exec),
    reports: sqliteReports(exec),
    observe: fromSync(sqliteObserve(exec)),
    tokens: fromSync(sqliteTokens(exec)),
    runs: sqliteRuns(exec),
    output: { ...fromSync(sqliteOutput(exec)), trim: sqliteOutputTrim(exec) },
    retention: sqliteRetention(exec),
    github: sqliteGithub(exec),
  });
}

/**
 * Opens (with intent `create`, makes) the database file and sets its pragmas. Only `baton up` and
 * `baton init` make a database: anything else refuses a missing path before SQLite could create
 * it (issue 14, item 9).
 */
function openDatabase(
  options: SqliteStoreOptions,
  intent: NonNullable<SqliteStoreOptions['intent']>,
): Database.Database {
  if (intent !== 'create' && options.path !== ':memory:' && !existsSync(options.path)) {
    throw noDatabase(options.path, true);
  }
  if (statSync(options.path, { throwIfNoEntry: false })?.isDirectory() === true) {
    throw aDirectory(options.path);
  }
  try {
    if (intent === 'create' && options.path !== ':memory:') {
      // Private from birth: directories Baton makes are 0700 and the file 0600; SQLite gives its
      // -wal and -shm files the database file's mode.
      mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
      keepOutOfGit(dirname(options.path));
      closeSync(openSync(options.path, 'a', 0o600));
    }
    const readonly = options.readOnly === true && intent === 'use';
    const db = new Database(options.path, {
      fileMustExist: intent !== 'create',
      readonly,
      nativeBinding: addonPath(),
    });
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? BUSY_TIMEOUT_MS}`);
    // Used as it is: a file that is not Baton's is refused before the pragmas below change it.
    if (intent === 'use' && options.path !== ':memory:' && !hasBatonTables(db)) {
      db.close();
      throw new NotBatonDatabaseError(options.path);
    }
    if (readonly) return db;
    db.pragma('journal_mode = WAL');
    // FULL: an acknowledged claim survives power loss, not only a process crash.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    if (options.scan === true) db.pragma(`cache_size = -${SCAN_CACHE_KIB}`);
    return db;
  } catch (error) {
    if (error instanceof NotBatonDatabaseError) throw error;
    const notOne = damaged(options.path, error);
    if (notOne !== null) throw notOne;
    if (diskFullAt(options.path, error))
      throw diskFullError(`cannot open SQLite database ${options.path}`, (error as Error).message);
    throw new StoreUnavailableError(
      `cannot open SQLite database ${options.path}: ${(error as Error).message}`,
      'check the path and its permissions, or pass --db / BATON_DB',
    );
  }
}

/** A --db / BATON_DB naming a directory: bad input (nothing to retry), not an unreachable database. */
function aDirectory(path: string): InvalidInputError {
  return new InvalidInputError(
    `${path} is a directory, not a database file`,
    "check --db / BATON_DB: name the database file (a project's is .baton/baton.db), or leave both out " +
      'in the project',
  );
}

/**
 * better-sqlite3's native addon where its install builds it (node-gyp's Release folder, else its
 * Debug one), so that the package's `bindings` helper does not search a dozen places for it at
 * every CLI call (issue 22, item 4), and so that the bundled CLI, which holds the package's
 * JavaScript but not the addon, loads it from the installed package; undefined (the package
 * searches itself) when neither holds it.
 */
export function addonPath(): string | undefined {
  const root = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  return ['Release', 'Debug']
    .map((build) => join(root, 'build', build, 'better_sqlite3.node'))
    .find((path) => existsSync(path));
}

/**
 * Whether opening failed for want of space: SQLITE_FULL, or an I/O error (growing the WAL index
 * fails as SQLITE_IOERR_*) while the file system holding the database has no block left.
 */
function diskFullAt(path: string, error: unknown): boolean {
  if (isDiskFull(error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_IOERR')) return false;
  try {
    return statfsSync(dirname(path)).bavail === 0;
  } catch {
    return false;
  }
}

/** The refusal for a file SQLite cannot read as a database, or null for any other error. */
function damaged(path: string, error: unknown): Error | null {
  const code = (error as { code?: unknown }).code;
  if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') return null;
  return notADatabase(path, (error as Error).message);
}

/** Whether the file holds Baton's schema_migrations table (a read of sqlite_master only). */
function hasBatonTables(db: Database.Database): boolean {
  return (
    db
      .prepare("SELECT 1 AS t FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get() !== undefined
  );
}

/** Refuses a file without Baton's tables, or with a schema other than the one this code knows. */
function useAsItIs(exec: SqliteExecutor, path: string, anySchema: boolean): void {
  const current = exec.read(() => {
    const table = exec.db
      .prepare("SELECT 1 AS t FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    if (table === undefined) return 0;
    return (exec.db.prepare(VERSION).get() as { v: number | null }).v ?? 0;
  });
  if (current === 0) throw noDatabase(path, false);
  if (anySchema) return;
  const refusal = schemaRefusal(current, Math.max(0, ...MIGRATIONS.map((migration) => migration.version)));
  if (refusal !== null) throw refusal;
}

/**
 * Applies what is missing in one transaction. Foreign keys are off meanwhile (a pragma that only
 * takes effect outside a transaction) so a migration may rebuild a table others reference, as
 * SQLite's ALTER TABLE documentation prescribes; the transaction checks them before it commits.
 */
function migrate(exec: SqliteExecutor, target: number): void {
  exec.db.pragma('foreign_keys = OFF');
  try {
    migrateWithin(exec, target);
  } finally {
    exec.db.pragma('foreign_keys = ON');
  }
}

function migrateWithin(exec: SqliteExecutor, target: number): void {
  exec.write(() => {
    exec.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const row = exec.db.prepare(VERSION).get() as { v: number | null };
    const current = row.v ?? 0;
    const known = Math.max(0, ...MIGRATIONS.map((migration) => migration.version));
    if (current > known) throw schemaTooNew(current, known);
    const recorded = new Set(
      (exec.db.prepare(RECORDED_SQL).all() as { version: number }[]).map((done) => done.version),
    );
    for (const migration of MIGRATIONS) {
      if (migration.version <= current || migration.version > target || recorded.has(migration.version))
        continue;
      exec.db.exec(migration.sql);
      exec.db
        .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
        .run(migration.version, migration.name, exec.now());
    }
    const broken = exec.db.pragma('foreign_key_check') as unknown[];
    if (broken.length > 0) throw new Error(`a migration broke ${broken.length} foreign key(s)`);
  });
}
