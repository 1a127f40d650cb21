/**
 * The compiled `baton` command, spawned against one database, for end-to-end CLI tests. Each
 * call runs in one of two modes: `db` (BATON_DB) or `api`, over HTTP (BATON_URL and an operator
 * BATON_TOKEN, no database) through a real `baton serve` on that database, started on the first
 * call and shared by every later call on it. Tests run their cases in the modes cliModes gives
 * (both on SQLite, `db` on PostgreSQL) and assert the same text, JSON and exit codes.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { openStore } from '../../src/store/open.js';

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The repository's root: the folder above this file that holds package.json. */
export function repoRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

const root = repoRoot();

export type CliMode = 'db' | 'api';

/**
 * The modes a case runs in on `engine`: `db` on every engine, `api` on SQLite only.
 *
 * Over HTTP the command talks to `baton serve`, whose routes call the same coordinator through
 * the same store port whatever the engine behind it: the HTTP client, the routes and their
 * encoding are one piece of code, and what differs between engines lies below the port, where
 * the conformance suite and the `db` mode on both engines hold each engine to the same answers.
 * Running `api` on both engines ran that one piece of code twice, at a quarter of the CLI suites'
 * time (each case also starts a `baton serve` and makes a token). SQLite because it needs no
 * server, so a checkout without PostgreSQL still covers the HTTP path. Where an engine shows
 * through HTTP (a value one engine cannot store, an error only one raises), the HTTP suites
 * (test/http/) run on both engines; a CLI case that depends on it loops over `cliModes('all')`.
 *
 * BATON_TEST_CLI_MODES=db (or api) runs one mode; BATON_TEST_CLI_HTTP=all runs `api` on every
 * engine again.
 */
export function cliModes(engine: 'sqlite' | 'postgres' | 'all'): readonly CliMode[] {
  const only = process.env['BATON_TEST_CLI_MODES'];
  const httpHere = engine !== 'postgres' || process.env['BATON_TEST_CLI_HTTP'] === 'all';
  return (['db', 'api'] as const)
    .filter((m) => m === 'db' || httpHere)
    .filter((m) => only === undefined || only === '' || only.includes(m));
}

/** Why a case runs only against the database, as a node:test skip in api mode. */
export function localOnly(mode: CliMode, why: string): string | false {
  return mode === 'api' ? `local by nature: ${why}` : false;
}

interface Served {
  readonly url: string;
  readonly token: string;
  readonly child: ChildProcess;
}

const served = new Map<string, Promise<Served>>();

function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, ['bin/baton.js', ...args], { cwd: root, env }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return { ...env, ...extra };
}

/**
 * An operator token on the database, made in this process as `baton token create` makes it
 * (same coordinator call, same audit row): a setup step, not the command under test, so it costs
 * no process of its own.
 */
async function operatorToken(db: string): Promise<string> {
  const store = await openStore(db, { intent: 'use' });
  try {
    return (await new Coordinator(store).tokens.create({ scope: 'operator' })).secret;
  } finally {
    await store.close();
  }
}

/** `baton serve` on the database, with an operator token made for it; one per database. */
async function serve(db: string): Promise<Served> {
  const token = await operatorToken(db);
  const child = spawn(process.execPath, ['bin/baton.js', 'serve', '--http', '127.0.0.1:0'], {
    cwd: root,
    env: cleanEnv({ BATON_DB: db }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((found, failed) => {
    let out = '';
    const seen = (d: Buffer) => {
      out += d.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1] !== undefined) found(m[1]);
    };
    child.stdout?.on('data', seen);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => failed(new Error(`baton serve exited ${code}: ${out}`)));
  });
  child.unref();
  return { url, token, child };
}

/** Stops every `baton serve` this file started (call it in an `after`). */
export async function stopServers(): Promise<void> {
  const all = await Promise.allSettled([...served.values()]);
  served.clear();
  await Promise.all(
    all.map((r) => {
      if (r.status !== 'fulfilled' || r.value.child.exitCode !== null) return Promise.resolve();
      const { child } = r.value;
      // Held by the event loop again until it is gone, so that the `after` waits for it.
      child.ref();
      return new Promise<void>((gone) => {
        child.on('exit', () => gone());
        child.kill('SIGTERM');
      });
    }),
  );
}

/** Runs `baton ...args` on `db`: with BATON_DB, or in api mode over HTTP through `baton serve`. */
export async function batonIn(mode: CliMode, db: string, ...args: string[]): Promise<Run> {
  if (mode === 'db') return baton(db, ...args);
  const { url, token } = await servedApi(db);
  return spawnCli(args, cleanEnv({ BATON_URL: url, BATON_TOKEN: token }));
}

/** Runs `baton ...args` with none of BATON_DB, BATON_URL and BATON_TOKEN set: flags choose the store. */
export function batonBare(env: NodeJS.ProcessEnv, ...args: string[]): Promise<Run> {
  return spawnCli(args, cleanEnv(env));
}

/** The URL and operator token of the `baton serve` batonIn's api mode uses for `db`. */
export async function servedApi(db: string): Promise<{ url: string; token: string }> {
  let server = served.get(db);
  if (server === undefined) {
    server = serve(db);
    served.set(db, server);
  }
  const { url, token } = await server;
  return { url, token };
}

/** Runs `baton ...args` with BATON_DB set to `db`. */
export function baton(db: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  delete env['BATON_DEBUG'];
  return new Promise((done) => {
    execFile(process.execPath, ['bin/baton.js', ...args], { cwd: root, env }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

/**
 * The calls a test makes against one database: plain, `--json` with an expected exit, a session,
 * and an agent token bound to a session (`token create --scope agent`).
 */
export function cliOn(db: string, mode: CliMode = 'db') {
  const run = (...args: string[]): Promise<Run> => batonIn(mode, db, ...args);
  const json = async <T = Record<string, unknown>>(code: number, ...args: string[]): Promise<T> => {
    const result = await run(...args, '--json');
    assert.equal(result.code, code, `baton ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const session = async (): Promise<string> => {
    const result = await run('session', 'start');
    assert.equal(result.code, 0, result.stderr);
    return result.stdout.trim();
  };
  const agentToken = (session: number | string): Promise<{ id: string; token: string }> =>
    json(0, 'token', 'create', '--scope', 'agent', '--session', String(session));
  return { run, json, session, agentToken };
}
