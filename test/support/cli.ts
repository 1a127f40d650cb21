/** The compiled `baton` command, spawned against one database, for end-to-end CLI tests. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** The calls a test makes against one database: plain, `--json` with an expected exit, a session. */
export function cliOn(db: string) {
  const run = (...args: string[]): Promise<Run> => baton(db, ...args);
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
  return { run, json, session };
}
