/**
 * `baton github sync` as a process, against the stand-in: `--every` keeps running pass after pass
 * without piling up abort listeners, and a `--token-env` that is no variable name, or a
 * `--github-authors` that names no author association, is said so. After a stop, only a stop is a
 * clean end: a store that failed keeps its error (exit 5).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batonBare, repoRoot } from '../support/cli.js';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { githubFixture, REPO } from './fixture.js';
import { failedPass } from '../../src/cli/commands/github.js';
import { GithubUnavailableError, StoreUnavailableError } from '../../src/core/errors.js';
import { GithubStoppedError } from '../../src/github/stop.js';

describe('baton github sync (a process)', () => {
  test('--every runs pass after pass (12 here) without MaxListenersExceededWarning, and stops on SIGTERM', async () => {
    const f = await githubFixture(sqliteDatabase());
    try {
      f.gh.add(1);
      const env = { ...process.env, ...f.env, BATON_DB: f.db };
      const child = spawn(process.execPath, ['bin/baton.js', 'github', 'sync', REPO, '--every', '1s'], {
        cwd: repoRoot(),
        env,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((done) => child.once('exit', done));
      const passes = (): number => stdout.split('\n').filter((line) => line.startsWith(REPO)).length;
      await waitUntil(() => passes() >= 12, 60_000, '12 passes');
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.doesNotMatch(stderr, /MaxListenersExceeded/);
    } finally {
      await f.close();
    }
  });

  test('--token-env 1X is refused as no variable name, not as a variable to export (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-token-env-'));
    const db = join(dir, 'baton.db');
    const run = await batonBare({ BATON_DB: db }, 'github', 'sync', REPO, '--token-env', '1X');
    const created = existsSync(db);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--token-env "1X" is not a variable name/);
    assert.doesNotMatch(run.stderr, /export 1X/);
    assert.equal(created, false, 'refused before the database was opened');
  });

  test('a --github-authors naming no author association is refused in one line (exit 2), nothing made', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-authors-'));
    const db = join(dir, 'baton.db');
    const env = { BATON_DB: db, GITHUB_TOKEN: 'x' };
    const run = await batonBare(env, 'github', 'sync', REPO, '--github-authors', 'members,friends');
    const created = existsSync(db);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /"FRIENDS" is not one of GitHub's author associations/);
    assert.equal(run.stderr.trim().split('\n').length, 1);
    assert.equal(created, false, 'refused before the database was opened');
  });
});

describe("--every's failed pass", () => {
  test('after a stop only GithubStoppedError is a clean stop; a store failure is thrown (exit 5)', () => {
    const stopped = new GithubStoppedError('GitHub GET /repos/acme/api/issues: stopped');
    assert.equal(failedPass(stopped, true, false), stopped.message);
    assert.equal(failedPass(stopped, true, true), JSON.stringify({ stopped: stopped.message }));
    const store = new StoreUnavailableError('the database is not answering', 'start it');
    assert.throws(() => failedPass(store, true, false), StoreUnavailableError);
    assert.throws(() => failedPass(store, false, false), StoreUnavailableError);
    const github = new GithubUnavailableError('GitHub answered 502', 'later');
    assert.equal(failedPass(github, false, false), 'GitHub answered 502; next pass later');
  });
});
