/**
 * Baton's state directory stays out of git. `.baton/` lives in the user's repository by default
 * and holds the database and the ledger's private key; `git status` listed it as untracked, so a
 * `git add -A` committed the private signing key. Real `baton` processes in a real git repository.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/cli.js';

const bin = join(repoRoot(), 'bin', 'baton.js');
const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8' });
const baton = (cwd: string, ...args: string[]): string =>
  execFileSync(process.execPath, [bin, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, BATON_DB: '', BATON_URL: '', BATON_LEDGER_KEY: '' },
  });

function repository(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-ignore-'));
  git(dir, 'init', '-q');
  writeFileSync(join(dir, 'README'), 'x\n');
  return dir;
}

test('the database and the ledger key in .baton/ never show in git status, so git add -A leaves them out', () => {
  const dir = repository();
  baton(dir, 'init');
  baton(dir, 'task', 'add', 't1');
  baton(dir, 'ledger', 'init');
  assert.ok(existsSync(join(dir, '.baton', 'baton.db')) && existsSync(join(dir, '.baton', 'ledger.key')));
  assert.equal(git(dir, 'status', '--porcelain'), '?? README\n');
  git(dir, 'add', '-A');
  assert.deepEqual(git(dir, 'diff', '--cached', '--name-only').trim().split('\n'), ['README']);
});

test('a .gitignore the user wrote in .baton/ is left as it is', () => {
  const dir = repository();
  mkdirSync(join(dir, '.baton'));
  writeFileSync(join(dir, '.baton', '.gitignore'), 'logs/\n');
  baton(dir, 'init');
  assert.equal(readFileSync(join(dir, '.baton', '.gitignore'), 'utf8'), 'logs/\n');
});
