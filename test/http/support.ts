/**
 * A real `baton serve` (or `baton up`) process on a test database, and what the HTTP tests need
 * around it: requests with a token, and a dump of every table to tell whether anything changed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { repoRoot } from '../support/cli.js';
import type { TestDatabase } from '../support/databases.js';
import type { RawSql } from '../support/raw-sql.js';

export interface Served {
  readonly url: string;
  /** Every line the process printed on stdout. */
  readonly lines: string[];
  readonly child: ChildProcess;
  stop(): Promise<number | null>;
}

/** Starts `baton <args>` and waits for the line with its URL. */
export function serve(
  db: string,
  args: readonly string[] = ['serve', '--http', '127.0.0.1:0'],
  env: Readonly<Record<string, string>> = {},
): Promise<Served> {
  const child = spawn(process.execPath, ['bin/baton.js', ...args], {
    cwd: repoRoot(),
    env: { ...process.env, ...env, BATON_DB: db },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    let buffered = '';
    // A process that never says where it serves is killed, so that a test that failed here does
    // not leave it running (and the test file with it).
    const timer = setTimeout(() => {
      child.removeAllListeners('exit');
      child.kill('SIGKILL');
      reject(new Error(`no URL within 20 s; stderr: ${stderr}`));
    }, 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`baton ${args.join(' ')} exited ${code}: ${stderr}`));
    });
    child.stdout?.on('data', (d: Buffer) => {
      buffered += d.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const url = /(http:\/\/[^\s)]+)/.exec(line)?.[1];
        if (url !== undefined) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          resolve({
            url,
            lines,
            child,
            stop: () =>
              new Promise((done) => {
                if (child.exitCode !== null) return done(child.exitCode);
                child.once('exit', (code) => done(code));
                child.kill('SIGINT');
              }),
          });
        }
      }
    });
  });
}

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export async function call(
  url: string,
  method: string,
  path: string,
  options: { token?: string | undefined; body?: unknown } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const init: RequestInit = { method, headers };
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  const response = await fetch(`${url}${path}`, init);
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** Every table's rows in a fixed order, `auth:refused` ledger rows left out, as one text. */
export async function dumpTables(db: TestDatabase, raw: RawSql): Promise<string> {
  const tables =
    db.engine === 'sqlite'
      ? await raw.exec(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
      : await raw.exec(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
        );
  const out: Record<string, unknown> = {};
  for (const { name } of tables) {
    const where = name === 'audit_events' ? " WHERE type <> 'auth:refused'" : '';
    out[String(name)] = await raw.exec(`SELECT * FROM ${String(name)}${where} ORDER BY 1`);
  }
  return JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

/**
 * The API's one refusal of a whole number in a path or a query (http/kit.ts): the parameter, its
 * range, the form and what was given, as JSON quotes it.
 */
export const wholeNumberWords = (name: string, min: number, max: number, got: string): string =>
  `${name}: must be a whole number from ${min} to ${max} in plain digits ` +
  `(no sign, spaces, decimals, exponent or leading zeros), got ${JSON.stringify(got)}`;
