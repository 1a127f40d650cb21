/**
 * Baton finds its project from a subdirectory, as git finds its repository: with no --db and no
 * BATON_DB, the nearest directory from the working directory upward holding `.baton/baton.db` is
 * the project, whose database and `.baton/` (logs, worktrees) every command uses. A `baton up`
 * started two levels down once made a second, empty database there and never ran the jobs queued
 * at the root. `baton up` names the database it opened in its first line, and says "created" only
 * when it made it; `baton status` names it in its first line. Real `baton` processes, real files.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, type Run } from '../support/cli.js';
import { waitUntil } from '../support/wait.js';

const bin = join(repoRoot(), 'bin', 'baton.js');
// The search never climbs into the temporary directory itself: a stray /tmp/.baton is not ours.
const top = realpathSync(tmpdir());
const clean = { BATON_DB: '', BATON_URL: '', BATON_TOKEN: '', BATON_LEDGER_KEY: '' };
const baseEnv = { ...process.env, ...clean, BATON_CEILING_DIRECTORIES: top };
const ups: ChildProcess[] = [];

after(() => {
  for (const up of ups) if (up.exitCode === null) up.kill('SIGKILL');
});

function baton(cwd: string, args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd, env: { ...baseEnv, ...env } },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

async function ok(cwd: string, ...args: string[]): Promise<string> {
  const run = await baton(cwd, args);
  assert.equal(run.code, 0, `baton ${args.join(' ')} in ${cwd}: ${run.stderr}`);
  return run.stdout;
}

/** A project initialised at its root, and a directory two levels below it. */
async function project(): Promise<{ root: string; sub: string }> {
  const root = mkdtempSync(join(top, 'baton-project-'));
  const sub = join(root, 'src', 'deep');
  mkdirSync(sub, { recursive: true });
  await ok(root, 'init');
  return { root, sub };
}

/** `baton up` in `cwd`; its output collected, stopped with SIGINT by `stop`. */
function up(cwd: string, host: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [bin, 'up', '--host', host, '--no-http', '--lease-ttl', '2'], {
    cwd,
    env: { ...baseEnv, ...env },
  });
  ups.push(child);
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return {
    output: () => output,
    lines: () => output.split('\n').map((line) => line.replace(/^\S+Z /, '')),
    stop: async () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

test('from two levels down, task add, status and job log use the root database; nothing is created below', async () => {
  const { root, sub } = await project();
  assert.match(
    await ok(sub, 'task', 'add', 'from-below', '--title', 'added two levels down'),
    /added from-below/,
  );
  assert.match(await ok(root, 'task', 'list'), /from-below .*added two levels down/);
  const status = await ok(sub, 'status');
  assert.equal(status.split('\n')[0], `database ${join(root, '.baton', 'baton.db')} (SQLite)`);
  assert.ok(!existsSync(join(sub, '.baton')) && !existsSync(join(root, 'src', '.baton')), 'no .baton below');
});

test('baton up started two levels down runs the job enqueued at the root, and names its database', async () => {
  const { root, sub } = await project();
  const marker = join(root, 'ran.txt');
  await ok(root, 'enqueue', 'k1', '--command', `echo "ran in $PWD"; touch '${marker}'`);
  const runner = up(sub, 'below');
  await waitUntil(() => existsSync(marker), 30_000, `the job to run: ${runner.output()}`);
  await waitUntil(
    async () => /"status":\s*"done"/.test((await baton(root, ['job', 'show', '1', '--json'])).stdout),
    30_000,
    'the job to end done',
  );
  assert.equal(await runner.stop(), 0, runner.output());
  assert.equal(runner.lines()[0], `database ${join(root, '.baton', 'baton.db')} (SQLite): opened`);
  // Its log went to the root's .baton/logs, which `baton job log` reads from the subdirectory too.
  assert.ok(existsSync(join(root, '.baton', 'logs', 'job-1-attempt-1.log')));
  assert.match(await ok(sub, 'job', 'log', '1'), /^ran in /);
  assert.ok(!existsSync(join(sub, '.baton')), `no .baton in the subdirectory: ${runner.output()}`);
});

test('with no project above, init and up create the database in the current directory, and up says so', async () => {
  const fresh = mkdtempSync(join(top, 'baton-fresh-'));
  const first = up(fresh, 'fresh');
  await waitUntil(() => /joined as session/.test(first.output()), 30_000, `up to join: ${first.output()}`);
  assert.equal(await first.stop(), 0, first.output());
  const db = join(fresh, '.baton', 'baton.db');
  assert.equal(first.lines()[0], `database ${db} (SQLite): created (no database was there)`);
  const second = up(fresh, 'fresh');
  await waitUntil(() => /joined as session/.test(second.output()), 30_000, `up to join: ${second.output()}`);
  assert.equal(await second.stop(), 0, second.output());
  assert.equal(second.lines()[0], `database ${db} (SQLite): opened`);

  const other = mkdtempSync(join(top, 'baton-fresh-'));
  const nested = join(other, 'a', 'b');
  mkdirSync(nested, { recursive: true });
  const missing = await baton(nested, ['status']);
  assert.equal(missing.code, 4, missing.stderr);
  assert.match(missing.stderr, /^baton: database \.baton\/baton\.db not found — .*run it in the project/);
  assert.match(await ok(nested, 'init'), /database ready: \.baton\/baton\.db/);
  assert.ok(existsSync(join(nested, '.baton', 'baton.db')) && !existsSync(join(other, '.baton')));
});

test('--db and BATON_DB win over the project found above; BATON_CEILING_DIRECTORIES stops the search', async () => {
  const { root, sub } = await project();
  const elsewhere = join(mkdtempSync(join(top, 'baton-elsewhere-')), 'other.db');
  await ok(sub, '--db', elsewhere, 'init');
  await ok(sub, '--db', elsewhere, 'task', 'add', 'by-flag');
  assert.equal((await baton(sub, ['task', 'add', 'by-env'], { BATON_DB: elsewhere })).code, 0);
  const there = await ok(sub, '--db', elsewhere, 'task', 'list');
  assert.match(there, /by-flag/);
  assert.match(there, /by-env/);
  assert.doesNotMatch(await ok(root, 'task', 'list'), /by-flag|by-env/);
  const status = await baton(sub, ['status'], { BATON_DB: elsewhere });
  assert.equal(status.stdout.split('\n')[0], `database ${elsewhere} (SQLite)`);
  // A ceiling at the project's root: the search from below never enters it, as git's.
  const ceiling = await baton(sub, ['status'], { BATON_CEILING_DIRECTORIES: `${top}:${root}` });
  assert.equal(ceiling.code, 4, ceiling.stderr);
  assert.ok(!existsSync(join(sub, '.baton')));
});

test("baton up two levels down, with a key registered and no key file, names the project's key path", async () => {
  const { root, sub } = await project();
  const elsewhere = join(mkdtempSync(join(top, 'baton-key-')), 'ledger.key');
  await ok(root, 'ledger', 'init', '--key-file', elsewhere);
  const runner = up(sub, 'below');
  await waitUntil(() => /not sealing the ledger/.test(runner.output()), 30_000, runner.output());
  await runner.stop();
  // The file ledgerOptions looks for: the project's .baton/ledger.key, not the subdirectory's.
  assert.match(
    runner.output(),
    new RegExp(`this host has no key file \\(${join(root, '.baton', 'ledger.key')}\\)`),
  );
});
