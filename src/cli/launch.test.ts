/**
 * The CLI's code cache (launch.ts), with real processes on a bundle of the same shape as
 * scripts/bundle-cli.mjs writes: a cache is used while it matches the bundle and this Node, and
 * anything else (a bundle changed in place, a flipped or cut cache, a folder that cannot take
 * one) runs the bundle as it is, never an old copy of it, and never fails the call.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  const run = (...args: string[]): Promise<{ stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      execFile(process.execPath, [runner, ...args], (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`launch exited ${String(error.code)}: ${stderr}`));
        else resolve({ stdout, stderr });
      });
    });
  return { bundle, cache: `${bundle}.cache`, run };
}

/** The cache file's identity: a rewrite renames a new file over it. */
const identity = (path: string): string => {
  const s = statSync(path);
  return `${s.ino}:${s.mtimeMs}`;
};

test('the first call writes the code cache; the next one runs from it and leaves it as it is', async (t) => {
  const s = setup(t);
  assert.equal((await s.run('a', 'b')).stdout, 'one a b\n');
  const written = identity(s.cache);
  const again = await s.run('c');
  assert.deepEqual(again, { stdout: 'one c\n', stderr: '' });
  assert.equal(identity(s.cache), written, 'a valid cache is not written again');
});

test('a bundle changed in place, to the same length, runs its new code and gets a fresh cache', async (t) => {
  const s = setup(t);
  await s.run();
  const before = readFileSync(s.cache);
  // V8 itself compares only the source's length: this cache would pass its check.
  writeFileSync(s.bundle, bundleText('two'));
  assert.equal((await s.run('x')).stdout, 'two x\n');
  assert.ok(!readFileSync(s.cache).equals(before), 'the cache was made again from the new bundle');
  assert.equal((await s.run('y')).stdout, 'two y\n');
});

test('a cache with a flipped byte, or cut short, is not used; the call works and writes it anew', async (t) => {
  const s = setup(t);
  await s.run();
  const good = readFileSync(s.cache);
  const flipped = Buffer.from(good);
  const at = flipped.length - 100;
  flipped[at] = (flipped[at] ?? 0) ^ 0xff;
  for (const broken of [flipped, good.subarray(0, good.length - 1), good.subarray(0, 10), Buffer.alloc(0)]) {
    writeFileSync(s.cache, broken);
    assert.deepEqual(await s.run('z'), { stdout: 'one z\n', stderr: '' });
    assert.ok(!readFileSync(s.cache).equals(broken), 'the broken cache was replaced');
    const rewritten = identity(s.cache);
    assert.deepEqual(await s.run('y'), { stdout: 'one y\n', stderr: '' });
    assert.equal(identity(s.cache), rewritten, 'the new cache is valid: the next call keeps it');
  }
});

test('a cache that cannot be written is no error: the call runs without one', async (t) => {
  const s = setup(t);
  // A folder where the file should be: neither readable as a cache nor replaceable by rename.
  mkdirSync(s.cache);
  writeFileSync(join(s.cache, 'keep'), '');
  assert.deepEqual(await s.run('w'), { stdout: 'one w\n', stderr: '' });
  assert.deepEqual(await s.run('v'), { stdout: 'one v\n', stderr: '' });
  assert.ok(statSync(s.cache).isDirectory());
  const left = readdirSync(dirname(s.cache)).filter((name) => name.endsWith('.tmp'));
  assert.deepEqual(left, [], 'no temporary file is left behind');
});
