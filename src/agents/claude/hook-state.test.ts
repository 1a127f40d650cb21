/**
 * The hooks' state folder is used only when it is this user's alone: one another local user made
 * first in a shared /tmp, or one others may write, is refused; a symlink planted there is not
 * written through.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidInputError } from '../../core/errors.js';
import { readState, stateDir, writeState, type HookState } from './hook-state.js';

const STATE: HookState = {
  claudeSession: 'c1',
  session: 7,
  owned: true,
  key: null,
  epoch: null,
  status: 'untracked',
  holder: null,
  claude: null,
  lastTool: null,
};

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-hook-state-test-'));
  made.push(dir);
  return dir;
}

test('a state folder owned by another uid is refused, read and write', (t) => {
  if (process.getuid?.() !== 0) return t.skip('needs root to give the folder to nobody');
  const dir = join(scratch(), 'state');
  mkdirSync(dir, { mode: 0o700 });
  const chown = spawnSync('chown', ['nobody', dir]);
  if (chown.status !== 0) return t.skip('no user nobody');
  assert.throws(() => writeState(dir, STATE), InvalidInputError);
  assert.throws(() => readState(dir, 'c1'), /not a directory only this user may write/);
});

test('a state folder others may write is refused, and one of its own is used', () => {
  const dir = join(scratch(), 'state');
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o777);
  assert.throws(
    () => writeState(dir, STATE),
    (e: unknown) => e instanceof InvalidInputError && /rm -r/.test(e.hint ?? ''),
  );
  chmodSync(dir, 0o700);
  writeState(dir, STATE);
  assert.equal(readState(dir, 'c1')?.session, 7);
});

test('a symlink planted in the state folder is not written through', () => {
  const dir = join(scratch(), 'state');
  const victim = join(scratch(), 'victim');
  writeFileSync(victim, 'untouched\n');
  mkdirSync(dir, { mode: 0o700 });
  // The temp name the state file's write used to take, and the state file itself.
  symlinkSync(victim, join(dir, `c1.json.${process.pid}.tmp`));
  symlinkSync(victim, join(dir, 'c1.json'));
  assert.equal(readState(dir, 'c1'), null, 'a symlinked state file is not read');
  writeState(dir, STATE);
  assert.equal(readFileSync(victim, 'utf8'), 'untouched\n');
  assert.ok(lstatSync(join(dir, 'c1.json')).isFile());
  assert.equal(readState(dir, 'c1')?.session, 7);
});

test('the state folder is under XDG_RUNTIME_DIR when set, else the temp directory', () => {
  assert.equal(stateDir({ XDG_RUNTIME_DIR: '/run/user/5' }), '/run/user/5/baton-claude-hooks');
  assert.equal(stateDir({ BATON_HOOK_STATE_DIR: '/x', XDG_RUNTIME_DIR: '/r' }), '/x');
  assert.match(stateDir({}), /baton-claude-hooks-\d+$/);
});
