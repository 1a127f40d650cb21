/**
 * Runs statements on a pg pool. Each store operation is one autocommit statement (a
 * data-modifying CTE), so a statement that fails on a serialization failure, a deadlock or a
 * unique violation left nothing behind and is simply run again: on the next run its fresh
 * snapshot sees the winner's row and takes the losing path. Connection failures become one-line
 * StoreUnavailableErrors naming the server. Statements are prepared once per connection; the
 * worker loop's batch gets its rows during its commit (manyRows, rows-before-commit.ts).
 */
import type pg from 'pg';
import { NotFoundError, StoreUnavailableError } from '../../core/errors.js';
import { queryRowsBeforeCommit } from './rows-before-commit.js';
import { PassfileClient } from './pgpass.js';
import { actingAsAnyone, actingToken } from '../actor.js';

/** serialization_failure, deadlock_detected, unique_violation. */
const RETRY_CODES = new Set(['40001', '40P01', '23505']);
const RETRY_MAX = 8;

/** Runs statements on one connection or on the pool. */
export interface Querier {
  /** One statement, prepared once per connection. */
  rows<R>(sql: string, values?: readonly unknown[]): Promise<R[]>;
  /** Unprepared SQL without parameters (simple protocol: may hold several statements). */
  exec<R>(sql: string): Promise<R[]>;
}

export class PgExecutor implements Querier {
  private readonly names = new Map<string, string>();

  /**
   * `server` is host:port (never the password), for error messages. `rewrite` changes every
   * statement's text before it is sent: the TEST-ONLY shared clock (test-switches.ts) alone uses
   * it; production passes none.
   */
  constructor(
    readonly pool: pg.Pool,
    readonly server: string,
    private readonly rewrite: ((sql: string) => string) | null = null,
  ) {}

  /** One autocommit statement, retried on 40001, 40P01 and 23505. */
  rows<R>(sql: string, values: readonly unknown[] = []): Promise<R[]> {
    return this.autocommit(sql, values, async (client, config) => (await client.query(config)).rows as R[]);
  }

  /** As rows, with this statement's own type parsers (the ledger reads times as the server prints them). */
  typedRows<R>(sql: string, values: readonly unknown[], types: pg.CustomTypesConfig): Promise<R[]> {
    return this.autocommit(
      sql,
      values,
      async (client, config) => (await client.query({ ...config, types })).rows as R[],
    );
  }

  /**
   * As rows, for a statement that answers with many rows (a batch of the worker loop): they are
   * sent before its commit and parsed while the commit is flushed (rows-before-commit.ts). A
   * one-row answer gains less from that than the second wake-up costs an idle client.
   *
   * `planned: 'per call'` sends the statement unnamed, so PostgreSQL plans it for the values of
   * each call (3-15 ms). Prepared, it got a generic plan after five runs, and jobs.batch's was far
   * worse: planned for arrays of unknown length and for statistics taken before any job ran, its
   * finish step re-read the finish list once per job the session held (500 × 500 rows: 83-100 ms,
   * against 12-24 ms planned for the values; docs/decisions/0017, "Measured design").
   */
  manyRows<R>(
    sql: string,
    values: readonly unknown[],
    planned: 'once per connection' | 'per call' = 'once per connection',
  ): Promise<R[]> {
    return this.autocommit(sql, values, (client, config) =>
      queryRowsBeforeCommit<R>(
        client,
        planned === 'per call' ? { text: config.text, values: [...values] } : config,
      ),
    );
  }

  private async autocommit<R>(
    sql: string,
    values: readonly unknown[],
    query: (client: pg.PoolClient, config: pg.QueryConfig) => Promise<R[]>,
  ): Promise<R[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.withClient((client) => query(client, this.config(sql, values)));
      } catch (error) {
        if (attempt < RETRY_MAX && isRetryable(error)) {
          await backoff(attempt);
          continue;
        }
        throw this.translate(error);
      }
    }
  }

  /** Unprepared SQL without parameters, for migrations and the schema version check. */
  async exec<R>(sql: string): Promise<R[]> {
    try {
      return await this.withClient(async (client) => rowsOf<R>(await client.query(this.text(sql))));
    } catch (error) {
      throw this.translate(error);
    }
  }

  /** The first row of one statement, or undefined. */
  async one<R>(sql: string, values: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.rows<R>(sql, values))[0];
  }

  /**
   * Several statements in one READ COMMITTED transaction, for the rare operation that needs a
   * fresh snapshot after taking a lock. Retried as a whole on 40001, 40P01 and 23505.
   */
  async transaction<T>(work: (transaction: Querier) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.withClient(async (client) => {
          await client.query('BEGIN');
          try {
            const result = await work({
              rows: async <R>(sql: string, values: readonly unknown[] = []) =>
                (await client.query(this.config(sql, values))).rows as R[],
              exec: async <R>(sql: string) => rowsOf<R>(await client.query(this.text(sql))),
            });
            await client.query('COMMIT');
            return result;
          } catch (error) {
            // A failed ROLLBACK means the connection is gone; withClient then drops it.
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          }
        });
      } catch (error) {
        if (attempt < RETRY_MAX && isRetryable(error)) {
          await backoff(attempt);
          continue;
        }
        throw this.translate(error);
      }
    }
  }

  /**
   * Checks a client out for `work`. Unlike pool.query, a statement error (a unique violation
   * about to be retried) keeps the connection and its prepared statements; only a connection
   * failure drops it.
   */
  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // A checked-out client has no idle listener: an error between statements must not crash.
    let failed: unknown = undefined;
    const onError = (error: unknown): void => {
      failed = error;
    };
    client.on('error', onError);
    let drop = true;
    try {
      await actAs(client);
      const result = await work(client);
      drop = failed !== undefined;
      return result;
    } catch (error) {
      // Keep the connection only after a plain SQL error; anything else may have broken it.
      drop = failed !== undefined || connectionFailure(error) !== null || codeOf(error) === undefined;
      throw error;
    } finally {
      client.removeListener('error', onError);
      client.release(drop);
    }
  }

  /** The error as the store reports it (translatePgError). */
  translate(error: unknown): unknown {
    return translatePgError(error, this.server);
  }

  private config(sql: string, values: readonly unknown[]): pg.QueryConfig {
    let name = this.names.get(sql);
    if (name === undefined) {
      name = `baton_${this.names.size + 1}`;
      this.names.set(sql, name);
    }
    return { name, text: this.text(sql), values: [...values] };
  }

  private text(sql: string): string {
    return this.rewrite === null ? sql : this.rewrite(sql);
  }
}

/**
 * StoreUnavailableError for a connection failure; any other error as it is. A database that
 * does not exist is not found (exit 4), as a SQLite path with no file is: waiting will not help.
 * `server` is host:port (serverOf). The store's open and every client of its own (`baton db copy`'s
 * target, `baton db roles`: connectClient) report failures so.
 */
function translatePgError(error: unknown, server: string): unknown {
  if (codeOf(error) === '3D000') {
    const name = /database "(.*)" does not exist/.exec((error as Error).message)?.[1] ?? '?';
    return new NotFoundError(
      'database',
      `${name} on PostgreSQL at ${server}`,
      `create it (createdb ${name}), then \`baton init\` makes Baton's tables; or fix the database URL`,
    );
  }
  const reason = connectionFailure(error);
  if (reason === null) return error;
  return new StoreUnavailableError(`cannot use PostgreSQL at ${server}: ${reason.message}`, reason.hint);
}

/** A client of its own connected to `url`; a failure to connect is reported as the store's open reports it. */
export async function connectClient(url: string, application: string): Promise<PassfileClient> {
  const client = new PassfileClient({ connectionString: url, application_name: application });
  try {
    await client.connect();
  } catch (error) {
    throw translatePgError(error, serverOf(url));
  }
  return client;
}

/** host:port from the URL, for messages; the password never appears. */
export function serverOf(url: string): string {
  try {
    const parsed = new URL(url);
    const socketHost = parsed.searchParams.get('host');
    const host = socketHost ?? (parsed.hostname === '' ? 'localhost' : parsed.hostname);
    return `${host}:${parsed.port === '' ? '5432' : parsed.port}`;
  } catch {
    throw new StoreUnavailableError(
      'the PostgreSQL URL is malformed',
      'write it as postgres://user:password@host:5432/database',
    );
  }
}

/** The `baton.token` each connection was last given; a connection never given one has none. */
const tokenOf = new WeakMap<pg.PoolClient, string>();

/**
 * Gives the connection the token the caller acts with (actor.ts), which audit_events.token_id
 * reads as its default, so every ledger row the next statements write records it. Costs a round
 * trip only when the connection's token changes: a request with a token, then a call without one.
 */
async function actAs(client: pg.PoolClient): Promise<void> {
  if (actingAsAnyone()) return;
  const token = actingToken() ?? '';
  if ((tokenOf.get(client) ?? '') === token) return;
  await client.query({ text: "SELECT set_config('baton.token', $1::text, false)", values: [token] });
  tokenOf.set(client, token);
}

/** A multi-statement simple query resolves to one result per statement: keep the last. */
function rowsOf<R>(result: pg.QueryResult | pg.QueryResult[]): R[] {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return (last?.rows ?? []) as R[];
}

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Node's happy-eyeballs connect reports an AggregateError of the per-address failures.
  const inner = (error as { errors?: unknown }).errors;
  return Array.isArray(inner) ? codeOf(inner[0]) : undefined;
}

function isRetryable(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && RETRY_CODES.has(code);
}

const backoff = (attempt: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));

const START_SERVER = 'start the server, or check the host and port in the database URL';
const PASSWORD =
  'check the user and password: in the URL, in PGPASSWORD, or in the password file ' +
  '(PGPASSFILE, default ~/.pgpass, mode 0600); URLs Baton hands on carry none';
// A connection lost after a write was sent is an unknown outcome, not a failure.
const LOST = 'the connection dropped: a write may or may not have been applied, so read before retrying';

/** What went wrong with the connection, in one line; null when it is not a connection failure. */
function connectionFailure(error: unknown): { message: string; hint: string } | null {
  const code = codeOf(error) ?? '';
  const text = oneLine(error instanceof Error ? error.message : String(error));
  switch (code) {
    case 'ECONNREFUSED':
      return { message: 'connection refused', hint: START_SERVER };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { message: 'host not found', hint: 'check the host name in the database URL' };
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { message: `network unreachable (${code})`, hint: START_SERVER };
    case 'ECONNRESET':
    case 'EPIPE':
      return { message: `connection lost (${code})`, hint: LOST };
    case '3D000':
      return { message: text, hint: 'create the database (createdb NAME), or fix the URL' };
    case '53300':
      return { message: text, hint: 'lower the pool size, or raise max_connections on the server' };
    case '57P01':
    case '57P02':
      return { message: text, hint: LOST };
    case '57P03':
      return { message: text, hint: 'the server is starting or shutting down; retry shortly' };
  }
  if (code.startsWith('28')) return { message: text, hint: PASSWORD };
  if (code.startsWith('08')) return { message: text, hint: START_SERVER };
  if (code !== '') return null;
  // pg's own failures carry no code: a connect timeout, a socket closed under a query.
  if (/timeout/i.test(text) && /connect/i.test(text)) {
    return { message: `connection timed out (${text})`, hint: START_SERVER };
  }
  if (/Connection terminated/i.test(text)) return { message: text, hint: LOST };
  // SCRAM asked for a password and the URL, PGPASSWORD and the password file gave none.
  if (/password must be a string/i.test(text)) {
    return { message: 'the server asks for a password and none was given', hint: PASSWORD };
  }
  // query_timeout: no reply in time; the connection is dropped and the outcome is unknown.
  if (/Query read timeout/i.test(text)) return { message: 'no reply from the server in time', hint: LOST };
  return null;
}

const oneLine = (sql: string): string => sql.replace(/\s+/g, ' ').trim();
