/**
 * The CLI's code cache (launch.ts), with real processes on a bundle of the same shape as
 * scripts/bundle-cli.mjs writes: a cache is used while it matches the bundle and this Node, and
 * anything else (a bundle changed in place, a flipped or cut cache, a folder that cannot take
 * one) runs the bundle as it is, never an old copy of it, and never fails the call. The real
 * bundles, run by Node directly (`node dist/src/cli-bundle/main.cjs status`), run their command as
 * bin/baton.js does: they used to do nothing, exit 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';

const LAUNCH = join(repoRoot(), 'dist', 'src', 'cli', 'launch.js');

/** A bundle whose main prints `word` and its arguments; the word is in code V8 compiles lazily. */
function bundleText(word: string): string {
  return [
    '(function (exports, require, module, __filename, __dirname) {"use strict";',
    'function say(argv) { return "' + word + ' " + argv.slice(2).join(" "); }',
    'exports.main = async (argv) => { process.stdout.write(say(argv) + "\\n"); };',
    '})',
  ].join('\n');
}

interface Setup {
  readonly bundle: string;
  readonly cache: string;
  run(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** The same, with these variables added to the environment (BATON_URL and BATON_DB unset). */
  runWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ stdout: string; stderr: string }>;
}

function setup(t: { after(fn: () => void): void }): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'baton-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = join(dir, 'main.cjs');
  const runner = join(dir, 'run.mjs');
  writeFileSync(bundle, bundleText('one'));
  writeFileSync(
    runner,
    `import { launch } from ${JSON.stringify(LAUNCH)};\nawait launch(${JSON.stringify(bundle)}, process.argv);\n`,
  );
  const runWith = (env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const inherited = { ...process.env };
      delete inherited['BATON_URL'];
      delete inherited['BATON_DB'];
      const options = { env: { ...inherited, ...env } };
      execFile(process.execPath, [runner, ...args], options, (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`launch exited ${String(error.code)}: ${stderr}`));
        else resolve({ stdout, stderr });
      });
    });
  return { bundle, cache: `${bundle}.cache`, run: (...args) => runWith({}, ...args), runWith };
}

/**
 * Waits until the bundle has been left alone long enough for the launcher to make a cache of it
 * (SETTLE_MS in launch.ts, 2 s, and a margin).
 */
async function settled(bundle: string): Promise<void> {
  const left = statSync(bundle).ctimeMs + 2_100 - Date.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}

/** The cache file's identity: a rewrite renames a new file over it. */
const identity = (path: string): string => {
  const s = statSync(path);
  return `${s.ino}:${s.mtimeMs}`;
};

test('the first call writes the code cache; the next one runs from it and leaves it as it is', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  assert.equal((await s.run('a', 'b')).stdout, 'one a b\n');
  const written = identity(s.cache);
  const again = await s.run('c');
  assert.deepEqual(again, { stdout: 'one c\n', stderr: '' });
  assert.equal(identity(s.cache), written, 'a valid cache is not written again');
});

test('a bundle changed in place, to the same length, runs its new code and gets a fresh cache', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  await s.run();
  const before = readFileSync(s.cache);
  // V8 itself compares only the source's length: this cache would pass its check.
  writeFileSync(s.bundle, bundleText('two'));
  assert.equal((await s.run('x')).stdout, 'two x\n');
  // A bundle written a moment ago may be written again within its file system's tick of time.
  assert.ok(readFileSync(s.cache).equals(before), 'no cache is made of a bundle that has just changed');
  await settled(s.bundle);
  assert.equal((await s.run('y')).stdout, 'two y\n');
  assert.ok(!readFileSync(s.cache).equals(before), 'the cache was made again from the new bundle');
  const remade = identity(s.cache);
  assert.equal((await s.run('z')).stdout, 'two z\n');
  assert.equal(identity(s.cache), remade, 'the new cache is valid: the next call keeps it');
});

test('a bundle copied elsewhere is another file: its first settled call makes its own cache', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  await s.run();
  const copy = `${s.bundle}.copy`;
  writeFileSync(copy, readFileSync(s.bundle));
  renameSync(copy, s.bundle);
  const before = readFileSync(s.cache);
  await settled(s.bundle);
  assert.equal((await s.run('c')).stdout, 'one c\n');
  assert.ok(!readFileSync(s.cache).equals(before), 'a cache made for another file is not taken');
});

test('a cache with a flipped byte, or cut short, is not used; the call works and writes it anew', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  await s.run();
  const good = readFileSync(s.cache);
  // V8's payload is in the file twice, after the header line: a byte of either copy.
  const flip = (at: number): Buffer => {
    const flipped = Buffer.from(good);
    flipped[at] = (flipped[at] ?? 0) ^ 0xff;
    return flipped;
  };
  const payload = (good.length - good.indexOf('\n', good.indexOf('\n') + 1) - 1) / 2;
  assert.ok(Number.isInteger(payload) && payload > 100, 'the payload is there twice');
  const broken = [flip(good.length - payload - 50), flip(good.length - 100), flip(good.indexOf('\n') + 3)];
  broken.push(good.subarray(0, good.length - 1), good.subarray(0, good.length - 2), good.subarray(0, 10));
  for (const bytes of [...broken, Buffer.alloc(0)]) {
    writeFileSync(s.cache, bytes);
    assert.deepEqual(await s.run('z'), { stdout: 'one z\n', stderr: '' });
    assert.ok(!readFileSync(s.cache).equals(bytes), 'the broken cache was replaced');
    const rewritten = identity(s.cache);
    assert.deepEqual(await s.run('y'), { stdout: 'one y\n', stderr: '' });
    assert.equal(identity(s.cache), rewritten, 'the new cache is valid: the next call keeps it');
  }
});

test('a call over PostgreSQL or the HTTP API keeps its own cache, chosen as the CLI reads its options', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  const caches = (): string[] =>
    readdirSync(dirname(s.bundle))
      .filter((name) => name.endsWith('.cache'))
      .sort();
  const pg = 'postgres://u@h/db';
  const calls: [NodeJS.ProcessEnv, string[], string][] = [
    [{}, ['--db', pg], 'main.cjs.pg.cache'],
    [{}, ['claim', 'k', '--api=http://h:1'], 'main.cjs.api.cache'],
    [{ BATON_DB: pg }, [], 'main.cjs.pg.cache'],
    [{ BATON_URL: 'http://h:1', BATON_DB: pg }, [], 'main.cjs.api.cache'],
    [{ BATON_URL: 'http://h:1' }, ['--db=POSTGRESQL://u@h/db'], 'main.cjs.pg.cache'],
    [{ BATON_DB: pg }, ['--db', 'local.db', '--api', 'http://h:1'], 'main.cjs.cache'],
    [{ BATON_DB: pg }, ['--', '--db', 'local.db'], 'main.cjs.pg.cache'],
  ];
  for (const [env, args, cache] of calls) {
    const label = `${JSON.stringify(env)} ${args.join(' ')}`;
    for (const name of caches()) rmSync(join(dirname(s.bundle), name));
    assert.equal((await s.runWith(env, ...args)).stdout, `one ${args.join(' ')}\n`, label);
    assert.deepEqual(caches(), [cache], label);
  }
});

test('a cache that cannot be written is no error: the call runs without one', async (t) => {
  const s = setup(t);
  await settled(s.bundle);
  // A folder where the file should be: neither readable as a cache nor replaceable by rename.
  mkdirSync(s.cache);
  writeFileSync(join(s.cache, 'keep'), '');
  assert.deepEqual(await s.run('w'), { stdout: 'one w\n', stderr: '' });
  assert.deepEqual(await s.run('v'), { stdout: 'one v\n', stderr: '' });
  assert.ok(statSync(s.cache).isDirectory());
  const left = readdirSync(dirname(s.cache)).filter((name) => name.endsWith('.tmp'));
  assert.deepEqual(left, [], 'no temporary file is left behind');
});

/** `node <file> <args>` in `cwd`, with its exit code (BATON_URL and BATON_DB unset). */
function node(
  cwd: string,
  file: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env['BATON_URL'];
  delete env['BATON_DB'];
  return new Promise((resolve) => {
    execFile(process.execPath, [file, ...args], { cwd, env }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr }),
    );
  });
}

test('a bundle run by Node directly runs the command, as bin/baton.js does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-direct-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bundles = join(repoRoot(), 'dist', 'src', 'cli-bundle');
  const bin = join(repoRoot(), 'bin', 'baton.js');
  const db = join(dir, 'baton.db');
  assert.equal((await node(dir, bin, '--db', db, 'init')).code, 0);
  // It did nothing and exited 0: `status` said nothing, `task add` added nothing.
  const direct = await node(dir, join(bundles, 'main.cjs'), '--db', db, 'task', 'add', 'direct');
  assert.deepEqual([direct.code, direct.stderr], [0, '']);
  for (const args of [['status'], ['task', 'list'], [], ['nonsense']]) {
    const [bundled, binned] = await Promise.all([
      node(dir, join(bundles, 'main.cjs'), '--db', db, ...args),
      node(dir, bin, '--db', db, ...args),
    ]);
    assert.deepEqual(bundled, binned, `main.cjs ${args.join(' ')}`);
  }
  assert.match((await node(dir, bin, '--db', db, 'task', 'list')).stdout, /direct/);
  const session = (await node(dir, bin, '--db', db, 'session', 'start')).stdout.trim();
  const claimed = await node(
    dir,
    join(bundles, 'agent.cjs'),
    '--db',
    db,
    'claim',
    'direct',
    '--session',
    session,
  );
  assert.deepEqual([claimed.code, claimed.stderr], [0, ''], 'the agent bundle too');
  assert.match((await node(dir, bin, '--db', db, 'task', 'show', 'direct')).stdout, /claimed/);
});
