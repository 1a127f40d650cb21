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
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { schemaTooNew, StoreUnavailableError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { MIGRATIONS } from './migrations/index.js';
import { sqliteTasks, sqliteSessions } from './tasks-claims.js';
import { sqliteClaims } from './claims.js';
import { sqliteLifecycle, sqliteSettings } from './lifecycle.js';
import { sqliteJobs } from './jobs.js';
import { sqliteLeases, sqliteAudit } from './leases-audit.js';
import { SqliteRunner, asyncify, fromSync } from './runner.js';
import { sqliteHosts } from './hosts.js';
import { sqliteDispatch, sqliteRecovery } from './dispatch.js';
import { sqliteWorkspaceGroups } from './workspaces.js';
import { sqliteEffects } from './effects.js';
import { sqliteProgress } from './progress.js';
import { sqliteWakeups } from './wakeups.js';
import { CLOCK_TABLE_SQL, SAFE, type TestSwitches } from '../test-switches.js';
import { sqliteLedger, sqliteReports } from './ledger.js';
import { sqliteObserve } from './observe.js';
import { sqliteTokens } from './tokens.js';
import { sqliteGithub } from './github.js';

export interface SqliteStoreOptions {
  readonly path: string;
  /** How long one attempt waits for the write lock before retrying (ms). */
  readonly busyTimeoutMs?: number;
  /** Apply migrations up to this version only: for tests of data migrations on an old schema. */
  readonly migrateTo?: number;
  /** TEST ONLY (test-switches.ts); production never sets it. */
  readonly switches?: TestSwitches;
}

export function openSqliteStore(options: SqliteStoreOptions): Store {
  let db: Database.Database;
  try {
    if (options.path !== ':memory:') {
      // Private from birth: directories Baton makes are 0700 and the file 0600; SQLite gives its
      // -wal and -shm files the database file's mode.
      mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
      closeSync(openSync(options.path, 'a', 0o600));
    }
    db = new Database(options.path);
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 1000}`);
    db.pragma('journal_mode = WAL');
    // FULL: an acknowledged claim survives power loss, not only a process crash.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
  } catch (error) {
    throw new StoreUnavailableError(
      `cannot open SQLite database ${options.path}: ${(error as Error).message}`,
      'check the path and its permissions, or pass --db / BATON_DB',
    );
  }
  const switches = options.switches ?? SAFE;
  if (switches.sharedClock) db.exec(CLOCK_TABLE_SQL);
  const run = new SqliteRunner(db, switches.sharedClock);
  migrate(run, options.migrateTo ?? Number.MAX_SAFE_INTEGER);
  const wake = sqliteWakeups(run);
  return {
    engine: 'sqlite',
    capabilities: { multiHost: false },
    now: () => Promise.resolve(run.read(() => run.now())),
    schema: () =>
      Promise.resolve(
        run.read(() => ({
          applied:
            (run.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null })
              .v ?? 0,
          known: Math.max(...MIGRATIONS.map((m) => m.version)),
        })),
      ),
    wakeups: wake.wakeups,
    close: () => {
      wake.stop();
      db.close();
      return Promise.resolve();
    },
    tasks: asyncify(sqliteTasks(run)),
    sessions: asyncify(sqliteSessions(run)),
    claims: asyncify(sqliteClaims(run)),
    jobs: asyncify(sqliteJobs(run)),
    leases: asyncify(sqliteLeases(run)),
    audit: asyncify(sqliteAudit(run)),
    hosts: fromSync(sqliteHosts(run)),
    dispatch: fromSync(sqliteDispatch(run)),
    recovery: fromSync(sqliteRecovery(run)),
    ...sqliteWorkspaceGroups(run),
    effects: sqliteEffects(run, switches),
    progress: sqliteProgress(run),
    lifecycle: fromSync(sqliteLifecycle(run)),
    settings: fromSync(sqliteSettings(run)),
    ledger: sqliteLedger(run),
    reports: sqliteReports(run),
    observe: sqliteObserve(run),
    tokens: fromSync(sqliteTokens(run)),
    github: sqliteGithub(run),
  };
}

/**
 * Applies what is missing in one transaction. Foreign keys are off meanwhile (a pragma that only
 * takes effect outside a transaction) so a migration may rebuild a table others reference, as
 * SQLite's ALTER TABLE documentation prescribes; the transaction checks them before it commits.
 */
function migrate(run: SqliteRunner, target: number): void {
  run.db.pragma('foreign_keys = OFF');
  try {
    migrateWithin(run, target);
  } finally {
    run.db.pragma('foreign_keys = ON');
  }
}

function migrateWithin(run: SqliteRunner, target: number): void {
  run.write(() => {
    run.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const row = run.db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as {
      v: number | null;
    };
    const current = row.v ?? 0;
    const known = Math.max(0, ...MIGRATIONS.map((m) => m.version));
    if (current > known) throw schemaTooNew(current, known);
    for (const m of MIGRATIONS) {
      if (m.version <= current || m.version > target) continue;
      run.db.exec(m.sql);
      run.db
        .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
        .run(m.version, m.name, run.now());
    }
    const broken = run.db.pragma('foreign_key_check') as unknown[];
    if (broken.length > 0) throw new Error(`a migration broke ${broken.length} foreign key(s)`);
  });
}
