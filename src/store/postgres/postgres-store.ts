/**
 * The shared engine: one PostgreSQL database that processes on many hosts use at once.
 *
 * Every operation is one autocommit statement under READ COMMITTED wherever the success path
 * allows: a data-modifying CTE that makes the guarded change, writes the history row and
 * appends the audit row, so the ledger commits with the change in one round trip. Time is the
 * database's (clock_timestamp(), truncated to the millisecond), never a host's.
 */
import pg from 'pg';
import { assert } from '../../core/assert.js';
import {
  noDatabase,
  schemaRefusal,
  schemaTooNew,
  StoreUnavailableError,
  type OpenIntent,
} from '../../core/errors.js';
import { withoutPassword } from '../../core/redact.js';
import type { Store } from '../store.js';
import { postgresWakeups } from './wakeups.js';
import { MIGRATIONS } from './migrations/index.js';
import { NOW, ms } from './rows.js';
import { PassfileClient } from './pgpass.js';
import { PgExecutor, serverOf } from './executor.js';
import { postgresRuns } from './runs.js';
import { RECORDED_SQL, versionSql } from '../schema-version.js';
import { postgresOutput } from './output.js';
import { postgresOutputTrim } from './output-trim.js';
import { postgresSessions, postgresTasks } from './tasks-claims.js';
import { postgresClaims } from './claims.js';
import { postgresLifecycle } from './lifecycle.js';
import { postgresDependencies } from './dependencies.js';
import { postgresSettings } from './settings.js';
import { postgresJobs } from './jobs.js';
import { postgresLeases } from './leases-audit.js';
import { postgresHosts } from './hosts.js';
import { postgresDispatch, postgresRecovery } from './dispatch.js';
import { postgresWorkspaceGroups } from './workspaces.js';
import { postgresEffects } from './effects.js';
import { postgresProgress } from './progress.js';
import { CLOCK_OFFSET, CLOCK_TABLE_SQL, SAFE, type TestSwitches } from '../test-switches.js';
import { postgresLedgerGroups, postgresReports } from './ledger.js';
import { postgresObserve } from './observe.js';
import { postgresRetention } from './retention.js';
import { postgresTokens } from './tokens.js';
import { postgresGithub } from './github.js';
import { queueUpkeep, type UpkeepPolicy } from './upkeep.js';

export interface PostgresStoreOptions {
  /** postgres:// or postgresql:// URL. */
  readonly url: string;
  /** Connections in the pool (default 10). */
  readonly poolSize?: number;
  /** How long to wait for a connection before giving up (ms, default 5000). */
  readonly connectTimeoutMs?: number;
  /**
   * How long to wait for any reply before giving the call up as an unknown outcome and dropping
   * the connection (ms, default 5000). Without it a call on a silent connection (a partition)
   * waits for TCP keepalive, 7200 s by default on Linux, and every loop of `baton up` with it.
   */
  readonly queryTimeoutMs?: number;
  /** Apply migrations up to this version only: for tests of data migrations on an old schema. */
  readonly migrateTo?: number;
  /** What the caller may do to the database (errors.ts); `create` unless said. */
  readonly intent?: OpenIntent;
  /** When to vacuum the queue (upkeep.ts); UPKEEP_DEFAULT unless a test or the bench says. */
  readonly upkeep?: UpkeepPolicy;
  /** TEST ONLY (test-switches.ts); production never sets it. */
  readonly switches?: TestSwitches;
}

/** "baton" in ASCII: the advisory lock key that serialises migrations across processes. */
const MIGRATION_LOCK_KEY = 0x6261746f6e;
/** The schema's version (schema-version.ts): every listed migration up to it recorded. */
const VERSION = versionSql(MIGRATIONS.map((migration) => migration.version));

/**
 * bigint (int8) columns as JS numbers. Ids, epochs and counts stay far below 2^53. Set on this
 * pool only, so other pg users in the process keep pg's default (strings).
 */
function typeParsers(): pg.TypeOverrides {
  const types = new pg.TypeOverrides();
  types.setTypeParser(20 /* int8 */, (value: string) => {
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed)) throw new Error(`invariant broken: bigint ${value} exceeds 2^53`);
    return parsed;
  });
  return types;
}

/**
 * The store's connections are kept, not closed after pg-pool's default 10 s idle: a connection's
 * first run of a statement costs 4-15 ms more than later runs (catalog caches, planning), and a
 * start after an idle pause otherwise paid it on every statement (decision 0019, section 6). Idle
 * connections do not hold the process up: one that does not close its store still exits.
 */
const KEPT_CONNECTIONS = { idleTimeoutMillis: 0, allowExitOnIdle: true } as const;

/**
 * Whether a server process (a NOTIFY's sender, wakeups.ts) is one of this pool's connections now.
 * A pid leaves the set when its connection does, so another process's later backend that the
 * server gives the same pid is not taken for ours.
 */
function ownBackends(pool: pg.Pool): (pid: number) => boolean {
  const pids = new Set<number>();
  const pidOf = (client: pg.PoolClient): number | null =>
    (client as unknown as { processID: number | null }).processID;
  pool.on('connect', (client) => {
    const pid = pidOf(client);
    if (pid !== null) pids.add(pid);
  });
  pool.on('remove', (client) => {
    const pid = pidOf(client);
    if (pid !== null) pids.delete(pid);
  });
  return (pid) => pids.has(pid);
}

/** The database's clock. */
async function databaseNow(exec: PgExecutor): Promise<number> {
  const row = await exec.one<{ now: Date }>(`SELECT ${NOW} AS now`);
  assert(row !== undefined, 'SELECT gives one row');
  return ms(row.now);
}

/**
 * The settings of every connection the store makes. Times in UTC and ISO whatever the server's
 * defaults: the ledger's rows are hashed as printed. A transaction left idle past the query timeout
 * is ended by the server (idle_in_transaction_session_timeout): a process stopped or frozen between
 * two statements of one (SIGSTOP, a VM paused, a long GC) would otherwise hold its row locks for as
 * long as it stays stopped, and a leader's FOR SHARE on the lease row kept the standby from taking
 * the expired lease (test/e2e/cluster.test's paused leader, CI59 and CI61). Baton's transactions
 * send their statements back to back, so a live process never idles that long inside one.
 */
export function connectionConfig(options: PostgresStoreOptions) {
  const idleMs = options.queryTimeoutMs ?? 5_000;
  return {
    connectionString: options.url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    keepAlive: true,
    application_name: 'baton',
    options: `-c TimeZone=UTC -c DateStyle=ISO -c idle_in_transaction_session_timeout=${idleMs}`,
    types: typeParsers(),
    // A URL without a password takes it from PGPASSWORD or the passfile (pgpass.ts).
    Client: PassfileClient,
  };
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const server = serverOf(options.url);
  const config = connectionConfig(options);
  const pool = new pg.Pool({
    ...config,
    max: options.poolSize ?? 10,
    ...KEPT_CONNECTIONS,
    query_timeout: options.queryTimeoutMs ?? 5_000,
  });
  // An idle connection that dies (server restart, pg_terminate_backend) emits here; the pool
  // drops it and the next checkout connects afresh. Without a listener it would crash the process.
  pool.on('error', () => {});
  const backends = ownBackends(pool);
  const switches = options.switches ?? SAFE;
  const exec = new PgExecutor(pool, server, switches.sharedClock ? shiftClock : null);
  await prepareSchema(exec, pool, config, options, switches.sharedClock);
  // A LISTEN that never answers (a silent network) must not hold up waiters or close() for ever.
  const wake = postgresWakeups({ ...config, query_timeout: options.queryTimeoutMs ?? 5_000 }, backends);
  const beat = livenessPool(config, options, server, switches.sharedClock ? shiftClock : null);
  const upkeep = queueUpkeep(config, options.upkeep);
  return {
    engine: 'postgres',
    capabilities: { multiHost: true, concurrentReads: true },
    now: () => databaseNow(exec),
    schema: async () => {
      const row = await exec.one<{ v: number | null }>(VERSION);
      return { applied: row?.v ?? 0, known: Math.max(...MIGRATIONS.map((migration) => migration.version)) };
    },
    close: async () => {
      await wake.close();
      await upkeep.close((pid) => exec.rows('SELECT pg_cancel_backend($1::int)', [pid]));
      await Promise.all([pool.end(), beat.pool.end()]);
    },
    wakeups: wake.wakeups,
    tasks: postgresTasks(exec),
    sessions: postgresSessions(exec, beat),
    claims: postgresClaims(exec),
    jobs: postgresJobs(exec, upkeep.took),
    leases: postgresLeases(exec, beat),
    hosts: postgresHosts(exec, beat),
    dispatch: postgresDispatch(exec, upkeep.took),
    recovery: postgresRecovery(exec),
    ...postgresWorkspaceGroups(exec),
    effects: postgresEffects(exec, switches),
    progress: postgresProgress(exec),
    lifecycle: { ...postgresLifecycle(exec), ...postgresDependencies(exec) },
    settings: postgresSettings(exec),
    ...postgresLedgerGroups(exec, config.types),
    reports: postgresReports(exec),
    observe: postgresObserve(exec),
    tokens: postgresTokens(exec),
    runs: postgresRuns(exec),
    output: { ...postgresOutput(exec), trim: postgresOutputTrim(exec) },
    retention: postgresRetention(exec),
    github: postgresGithub(exec),
  };
}

/**
 * Connections kept for heartbeats and lease renewals alone (livenessPool): the sessions' beat
 * batches in flight at once (4, tasks-claims.ts), the runner's host beat and the renewal, so that
 * none of them queues behind another. Opened on demand, closed when idle.
 */
const LIVENESS_POOL_SIZE = 6;

/**
 * The executor of heartbeats and lease renewals, on a small pool of their own (issue 14, item 5).
 * On the shared pool a beat queued for a connection behind every slow call of a busy `baton up`
 * (its dispatcher's tick, its agents' API calls, a report): with all ten connections held for
 * seconds, a healthy host's beats did not reach the database within its trust window and it
 * fenced itself ("a heartbeat call did not answer"). Beats are short statements; their
 * connections are opened on first use.
 */
function livenessPool(
  config: pg.PoolConfig,
  options: PostgresStoreOptions,
  server: string,
  rewrite: ((sql: string) => string) | null,
): PgExecutor {
  const pool = new pg.Pool({
    ...config,
    max: LIVENESS_POOL_SIZE,
    query_timeout: options.queryTimeoutMs ?? 5_000,
  });
  pool.on('error', () => {});
  return new PgExecutor(pool, server, rewrite);
}

/**
 * Brings the schema to what this open asks for: intent `use` only checks it, the others migrate
 * it; under the shared-clock test switch it also makes the clock table. On failure the pool is
 * ended and the error translated.
 */
async function prepareSchema(
  exec: PgExecutor,
  pool: pg.Pool,
  config: pg.PoolConfig,
  options: PostgresStoreOptions,
  sharedClock: boolean,
): Promise<void> {
  try {
    // Migrations may rewrite big tables: they run on their own connection, without the timeout.
    if (options.intent === 'use') await useAsItIs(exec, withoutPassword(options.url));
    else
      await migrate(exec, options.migrateTo ?? Number.MAX_SAFE_INTEGER, () => {
        const own = new pg.Pool({ ...config, max: 1 });
        own.on('error', () => {});
        return { exec: new PgExecutor(own, serverOf(options.url)), end: () => own.end() };
      });
    if (sharedClock) await createClockTable(pool);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw exec.translate(error);
  }
}

/** Refuses a database without Baton's tables, or with a schema other than the one this code knows. */
async function useAsItIs(exec: PgExecutor, where: string): Promise<void> {
  let current = 0;
  try {
    const [row] = await exec.exec<{ v: number | null }>(VERSION);
    current = row?.v ?? 0;
  } catch (error) {
    // 42P01: undefined_table, a database nobody initialised.
    if ((error as { code?: unknown }).code !== '42P01') throw error;
  }
  if (current === 0) throw noDatabase(where, false);
  const refusal = schemaRefusal(current, Math.max(0, ...MIGRATIONS.map((migration) => migration.version)));
  if (refusal !== null) throw refusal;
}

/**
 * Applies missing migrations. The common case, an up-to-date schema, costs one read; otherwise
 * one transaction takes a transaction-scoped advisory lock, re-reads the version and applies
 * what is missing, so processes that start together apply each migration exactly once.
 */
async function migrate(
  exec: PgExecutor,
  target: number,
  migrator: () => { exec: PgExecutor; end: () => Promise<void> },
): Promise<void> {
  const latest = MIGRATIONS.reduce(
    (highest, migration) => (migration.version <= target ? Math.max(highest, migration.version) : highest),
    0,
  );
  try {
    const [row] = await exec.exec<{ v: number | null }>(VERSION);
    const known = Math.max(0, ...MIGRATIONS.map((migration) => migration.version));
    if ((row?.v ?? 0) > known) throw schemaTooNew(row?.v ?? 0, known);
    if ((row?.v ?? 0) >= latest) return;
  } catch (error) {
    // 42P01: undefined_table, a new database. Anything else is real.
    if ((error as { code?: unknown }).code !== '42P01') throw error;
  }
  const own = migrator();
  try {
    await applyMissing(own.exec, target);
  } catch (error) {
    // 42501: insufficient_privilege. The runtime role (docs/security.md) may not change the schema.
    if ((error as { code?: unknown }).code !== '42501') throw error;
    throw new StoreUnavailableError(
      `the schema needs migration ${latest}, which this role may not apply (${(error as Error).message})`,
      "run `baton db migrate` with the owner role's URL",
    );
  } finally {
    await own.end().catch(() => undefined);
  }
}

async function applyMissing(exec: PgExecutor, target: number): Promise<void> {
  await exec.transaction(async (querier) => {
    await querier.exec(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await querier.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`);
    const [row] = await querier.exec<{ v: number | null }>(VERSION);
    const current = row?.v ?? 0;
    const recorded = new Set(
      (await querier.exec<{ version: number }>(RECORDED_SQL)).map((done) => done.version),
    );
    for (const migration of MIGRATIONS) {
      if (migration.version <= current || migration.version > target || recorded.has(migration.version))
        continue;
      // The simple query protocol: a migration is several statements.
      await querier.exec(migration.sql);
      await querier.exec(
        `INSERT INTO schema_migrations (version, name, applied_at)
         VALUES (${migration.version}, '${migration.name}', ${NOW})`,
      );
    }
  });
}

/** TEST ONLY: every statement reads the database clock plus the shared offset (test-switches.ts). */
function shiftClock(sql: string): string {
  return sql.replaceAll(NOW, `(${NOW} + ${CLOCK_OFFSET} * interval '1 millisecond')`);
}

/** The shared clock's table; stores that open together may race to make it, which is harmless. */
async function createClockTable(pool: pg.Pool): Promise<void> {
  try {
    await pool.query(CLOCK_TABLE_SQL);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P07') throw error;
  }
}
