/**
 * Sampling a worktree for progress is a read: it must never take the index lock the agent's own
 * git commands need, on a real repository whose index is stale (the case plain `git status` writes).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { sampleWorktree, worktreeChanges } from './worktree-changes.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));

describe('worktree sampling', () => {
  test('leaves the index untouched even when its stat data is stale', async () => {
    const { repo } = makeRepo(home);
    const file = join(repo, 'README.md');
    // Same content, a new modification time: the index's cached stat no longer matches, so a
    // `git status` that may write would refresh the index (taking .git/index.lock to do it).
    const later = new Date(Date.now() + 60_000);
    utimesSync(file, later, later);
    const index = join(repo, '.git', 'index');
    const before = { bytes: readFileSync(index), mtimeMs: statSync(index).mtimeMs };
    const sample = await sampleWorktree(repo);
    assert.ok(sample !== null);
    assert.equal(sample.entries.size, 0, 'an unchanged file is not a change');
    assert.deepEqual(readFileSync(index), before.bytes, 'the index was not rewritten');
    assert.equal(statSync(index).mtimeMs, before.mtimeMs);
    // The control: plain git status does rewrite it, so the assertion above can fail.
    git(repo, 'status', '--porcelain');
    assert.notEqual(statSync(index).mtimeMs, before.mtimeMs, 'plain git status refreshes the index');
  });

  test('counts an edited file, a new file and a commit', async () => {
    const { repo } = makeRepo(home);
    const first = await sampleWorktree(repo);
    assert.ok(first !== null);
    writeFileSync(join(repo, 'README.md'), 'changed\n');
    writeFileSync(join(repo, 'new.txt'), 'new\n');
    const edited = await sampleWorktree(repo);
    assert.ok(edited !== null);
    assert.deepEqual(await worktreeChanges(repo, first, edited), { filesChanged: 2, commits: 0 });
    git(repo, 'add', '-A');
    git(repo, 'commit', '--quiet', '-m', 'two');
    const committed = await sampleWorktree(repo);
    assert.ok(committed !== null);
    assert.deepEqual(await worktreeChanges(repo, edited, committed), { filesChanged: 2, commits: 1 });
  });

  test('a directory outside any git checkout has no sample', async () => {
    assert.equal(await sampleWorktree(home), null);
  });
});
