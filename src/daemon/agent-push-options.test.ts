/**
 * The push options the runner gives an agent's git through its environment: appended after an
 * operator's own config variables, read by real git as `push.pushOption`, and given only to a
 * workspace with a remote that has Baton's server guard.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isolateGit, makeRepo, git } from '../../test/support/git.js';
import { DEFAULT_PROTECTED, installServerGuard } from '../coordinator/guard-server.js';
import { guardPushOptions, hasGuardedRemote, withPushOptions } from './agent-push-options.js';

isolateGit();
const claim = { key: 'gh:acme/api#1', epoch: 3, session: 12, token: 'baton_secret' };

describe('withPushOptions', () => {
  test('appends after the config variables the environment holds, and real git reads them', () => {
    const given = {
      PATH: process.env['PATH'] ?? '',
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'push.pushOption',
    };
    const env = withPushOptions({ ...given, GIT_CONFIG_VALUE_0: 'ci.skip' }, guardPushOptions(claim));
    assert.equal(env['GIT_CONFIG_COUNT'], '5');
    assert.equal(env['GIT_CONFIG_VALUE_0'], 'ci.skip', "the operator's own stays");
    const read = execFileSync('git', ['config', '--get-all', 'push.pushOption'], { env, encoding: 'utf8' });
    assert.deepEqual(read.trim().split('\n'), [
      'ci.skip',
      'baton-key=gh:acme/api#1',
      'baton-epoch=3',
      'baton-session=12',
      'baton-token=baton_secret',
    ]);
  });

  test('adds nothing for no options, and replaces a count git would refuse', () => {
    assert.deepEqual(withPushOptions({ A: 'b' }, []), { A: 'b' });
    const env = withPushOptions({ GIT_CONFIG_COUNT: 'many' }, ['baton-key=k']);
    assert.equal(env['GIT_CONFIG_COUNT'], '1');
    assert.equal(env['GIT_CONFIG_VALUE_0'], 'baton-key=k');
  });

  test('names the claim, and the token only when there is one (no token under --no-http)', () => {
    assert.deepEqual(guardPushOptions({ ...claim, token: undefined }), [
      'baton-key=gh:acme/api#1',
      'baton-epoch=3',
      'baton-session=12',
    ]);
  });
});

describe('hasGuardedRemote', () => {
  test('only a remote on this machine with the server guard installed counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-push-options-'));
    const { repo, remote } = makeRepo(dir);
    assert.equal(await hasGuardedRemote(repo), false, 'a plain bare origin takes no push options');
    git(repo, 'remote', 'add', 'far', 'git@example.com:acme/api.git');
    git(repo, 'remote', 'add', 'web', 'https://example.com/acme/api.git');
    assert.equal(await hasGuardedRemote(repo), false);
    const params = { db: 'sqlite:/nowhere.db', protect: DEFAULT_PROTECTED, requireToken: true };
    await installServerGuard({ ...params, repo: remote, node: process.execPath, batonBin: '/bin/true' });
    assert.equal(await hasGuardedRemote(repo), true);
    git(repo, 'remote', 'set-url', 'origin', `file://${remote}`);
    assert.equal(await hasGuardedRemote(repo), true, 'as a file:// URL too');
    git(repo, 'remote', 'set-url', 'origin', remote.replace(/\.git$/, ''));
    assert.equal(await hasGuardedRemote(repo), true, 'without its .git, as git finds it');
    assert.equal(await hasGuardedRemote(dir), false, 'not a repository: none');
    // Fetched from the guarded repository, pushed to a host: the token would go to the host.
    git(repo, 'remote', 'remove', 'far');
    git(repo, 'remote', 'remove', 'web');
    git(repo, 'remote', 'set-url', '--push', 'origin', 'https://example.com/acme/api.git');
    assert.equal(await hasGuardedRemote(repo), false, 'its push URL is a host: not guarded');
    git(repo, 'remote', 'set-url', '--push', 'origin', remote);
    assert.equal(await hasGuardedRemote(repo), true, 'its push URL is the guarded repository');
  });
});
