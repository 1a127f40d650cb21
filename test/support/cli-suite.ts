/**
 * The frame of the `baton` end-to-end suites (src/cli/cli.test.ts, cli-errors.test.ts): each case
 * gets a fresh database of its own, on SQLite and, when the test runner provides servers, on
 * PostgreSQL, reached with --db and over HTTP.
 */
import { after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { batonIn, cliModes, type CliMode, type Run } from './cli.js';
import { bothEngines, postgresDatabase, sqliteDatabase, type TestDatabase } from './databases.js';

export type Obj = Record<string, unknown>;

export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Asserts the exit code and that stderr is exactly one `baton: ` line without a stack. */
export function assertOneErrorLine(run: Run, code: number, what: string): string {
  assert.equal(run.code, code, `${what}: exit ${run.code}, stderr ${run.stderr}`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `${what}: stderr was ${JSON.stringify(run.stderr)}`);
  assert.match(lines[0] ?? '', /^baton: /);
  return lines[0] ?? '';
}

/** One fresh database and the CLI calls a test makes against it. */
export function bundle(db: string, mode: CliMode) {
  const run = (...args: string[]): Promise<Run> => batonIn(mode, db, ...args);
  /** Runs with --json, asserts the exit code and returns the parsed stdout. */
  const json = async <T = Obj>(code: number, ...args: string[]): Promise<T> => {
    const result = await run(...args, '--json');
    assert.equal(result.code, code, `baton ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  /** Starts a session and returns its id as printed: the plain stdout is just the id. */
  const session = async (...args: string[]): Promise<string> => {
    const result = await run('session', 'start', ...args);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\d+\n$/);
    return result.stdout.trim();
  };
  const claim = async (key: string, s: string): Promise<string> =>
    String((await json<{ epoch: number }>(0, 'claim', key, '--session', s)).epoch);
  const count = async (...args: string[]): Promise<number> => (await json<[]>(0, ...args)).length;
  /** Row counts as seen through the CLI itself. */
  const counts = async (): Promise<Obj> => ({
    audit: await count('audit'),
    tasks: await count('task', 'list'),
    sessions: await count('session', 'list'),
    jobs: await count('queue', 'list'),
  });
  return { db, run, json, session, claim, count, counts };
}

function engines(): readonly TestDatabase[] {
  if (process.env['BATON_TEST_PG_SERVERS']) return bothEngines();
  const url = process.env['BATON_TEST_PG_URL'];
  if (!url) return [sqliteDatabase()];
  return [sqliteDatabase(), postgresDatabase({ name: 'postgres (BATON_TEST_PG_URL)', url })];
}

/** What a case of describeCli gets: a fresh database with its CLI calls, or a bare fresh URL. */
export interface CliSuite {
  readonly mode: CliMode;
  readonly setup: () => Promise<ReturnType<typeof bundle>>;
  readonly fresh: () => Promise<string>;
}

/** Describes `cases` once per engine and CLI mode (cliModes: HTTP on one engine), four cases at a time. */
export function describeCli(title: string, cases: (suite: CliSuite) => void): void {
  for (const engine of engines())
    for (const mode of cliModes(engine.engine)) {
      describe(
        `${title} on ${engine.name}, ${mode === 'db' ? 'with --db' : 'over HTTP'}`,
        { concurrency: 4 },
        () => {
          const made: string[] = [];
          const fresh = async (): Promise<string> => {
            const url = await engine.fresh();
            made.push(url);
            return url;
          };
          const setup = async (): Promise<ReturnType<typeof bundle>> => bundle(await fresh(), mode);
          // The SQLite files live in temp directories of their own; PostgreSQL's throwaway server goes
          // away with its data, and CI's server is new for every run.
          after(() => {
            if (engine.engine !== 'sqlite') return;
            for (const path of made) rmSync(dirname(path), { recursive: true, force: true });
          });
          cases({ mode, setup, fresh });
        },
      );
    }
}
