/**
 * The worktree lifecycle on real git repositories, each made by its test in a temp directory with
 * a bare repository as its remote. Git reads no system or user configuration here.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { commitFile as commit, git, isolateGit, makeRepo } from '../../test/support/git.js';
import { ConflictError, FencedError, InvalidInputError } from '../core/errors.js';
import { prepareWorktree, retireWorktree } from './worktree.js';

const home = isolateGit();
const fixture = (): ReturnType<typeof makeRepo> => makeRepo(home);

const KEY = 'github:acme/api#1246';
const SLUG = 'github-acme-api-1246-44c34579';
const BRANCH = `baton/${SLUG}`;

after(() => rmSync(home, { recursive: true, force: true }));

describe('git worktree per claim', () => {
  test('creates a worktree on a branch named after the task, in a directory naming key and epoch', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    assert.equal(wt.branch, BRANCH);
    assert.equal(wt.path, join(base, `${SLUG}-epoch-1`));
    assert.equal(git(wt.path, 'rev-parse', '--abbrev-ref', 'HEAD'), BRANCH);
    assert.equal(git(wt.path, 'rev-parse', 'HEAD'), git(repo, 'rev-parse', 'main'));
    assert.equal(readFileSync(join(wt.path, 'README.md'), 'utf8'), 'hello\n');
  });

  test('gives two tasks two worktrees on two branches', async () => {
    const { repo, base } = fixture();
    const [a, b] = await Promise.all([
      prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base }),
      prepareWorktree({ repoPath: repo, key: 'JIRA-12', epoch: 1, baseDir: base }),
    ]);
    assert.notEqual(a.path, b.path);
    assert.equal(b.branch, 'baton/jira-12-07a0256c');
    assert.equal(git(b.path, 'rev-parse', '--abbrev-ref', 'HEAD'), 'baton/jira-12-07a0256c');
    commit(a.path, 'a.txt', 'a');
    assert.equal(existsSync(join(b.path, 'a.txt')), false);
  });

  test('prepares the same claim twice without making a second worktree', async () => {
    const { repo, base } = fixture();
    const first = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const again = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    assert.deepEqual(again, first);
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 2);
  });

  test('gives a second epoch a new directory on the same branch, continuing from the work so far', async () => {
    const { repo, base } = fixture();
    const one = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const work = commit(one.path, 'fix.ts', 'export {};\n');
    await retireWorktree({ repoPath: repo, path: one.path, branch: one.branch });
    const two = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 2, baseDir: base });
    assert.notEqual(two.path, one.path);
    assert.equal(basename(two.path), `${SLUG}-epoch-2`);
    assert.equal(two.branch, one.branch);
    assert.equal(git(two.path, 'rev-parse', 'HEAD'), work);
  });

  test('retires the worktree of an older epoch still holding the branch, archiving its changes', async () => {
    const { repo, base } = fixture();
    const one = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    writeFileSync(join(one.path, 'draft.md'), 'half done\n');
    const two = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 3, baseDir: base });
    assert.equal(existsSync(one.path), false);
    assert.equal(git(two.path, 'rev-parse', '--abbrev-ref', 'HEAD'), BRANCH);
    const archive = `refs/baton/archive/${SLUG}/1`;
    assert.equal(git(repo, 'show', `${archive}:draft.md`), 'half done');
  });

  test('retires an older epoch made under another base directory, as by a second baton up of the machine', async () => {
    // Issue 14, item 3: `baton up` in h1 and in h2 on one repository; h1 dies, the retry runs on h2.
    const { repo, base } = fixture();
    const one = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: join(base, 'h1') });
    writeFileSync(join(one.path, 'draft.md'), 'from h1\n');
    const two = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 2, baseDir: join(base, 'h2') });
    assert.equal(two.path, join(base, 'h2', `${SLUG}-epoch-2`));
    assert.equal(existsSync(one.path), false, "h1's checkout of the old epoch is retired");
    assert.equal(git(repo, 'show', `refs/baton/archive/${SLUG}/1:draft.md`), 'from h1');
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 2);
    // And the other way round: an older epoch is fenced off by a newer one made elsewhere.
    await assert.rejects(
      prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: join(base, 'h1') }),
      FencedError,
    );
  });

  test('refuses a branch checked out by hand elsewhere with a hint an operator can follow', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    git(repo, 'worktree', 'move', wt.path, join(base, 'by-hand'));
    await assert.rejects(
      prepareWorktree({ repoPath: repo, key: KEY, epoch: 2, baseDir: base }),
      (error: unknown) =>
        error instanceof ConflictError &&
        /is checked out in .*by-hand/.test(error.message) &&
        /git -C .*by-hand switch --detach/.test(error.hint ?? '') &&
        !/retireWorktree|prepareWorktree/.test(`${error.message} ${error.hint ?? ''}`),
    );
  });

  test('refuses an older epoch once a newer epoch holds the branch', async () => {
    const { repo, base } = fixture();
    await prepareWorktree({ repoPath: repo, key: KEY, epoch: 2, baseDir: base });
    await assert.rejects(prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base }), FencedError);
  });

  test('gives keys differing in case or punctuation only, or without Latin letters, own worktrees', async () => {
    const { repo, base } = fixture();
    const keys = ['JIRA-7', 'jira-7', 'acme/api#1', 'acme:api#1', 'задача-1', 'задание-1'];
    const wts = await Promise.all(
      keys.map((key) => prepareWorktree({ repoPath: repo, key, epoch: 1, baseDir: base })),
    );
    assert.equal(new Set(wts.map((w) => w.path)).size, keys.length);
    assert.equal(new Set(wts.map((w) => w.branch)).size, keys.length);
    assert.match(wts[0]?.branch ?? '', /^baton\/jira-7-[0-9a-f]{8}$/, 'a readable slug and a short hash');
    const [upper, lower] = wts;
    assert.ok(upper !== undefined && lower !== undefined);
    writeFileSync(join(lower.path, 'mine.txt'), 'lower case work\n');
    const retired = await retireWorktree({ repoPath: repo, path: upper.path, branch: upper.branch });
    assert.equal(retired.archivedRef, null, "the other task's files are not in this archive");
    assert.equal(readFileSync(join(lower.path, 'mine.txt'), 'utf8'), 'lower case work\n');
    const archive = await retireWorktree({ repoPath: repo, path: lower.path, branch: lower.branch });
    assert.equal(git(repo, 'show', `${archive.archivedRef ?? ''}:mine.txt`), 'lower case work');
  });

  test('makes a worktree for a key whose plain slug git check-ref-format refuses', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: 'con.lock.lock', epoch: 1, baseDir: base });
    assert.match(wt.branch, /^baton\/con\.lock\.lock-[0-9a-f]{8}$/);
    git(repo, 'check-ref-format', `refs/heads/${wt.branch}`);
    writeFileSync(join(wt.path, 'draft.md'), 'kept\n');
    const retired = await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    assert.equal(git(repo, 'show', `${retired.archivedRef ?? ''}:draft.md`), 'kept');
  });

  test('refuses to reuse a worktree or branch recorded for another key', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: 'acme/api#7', epoch: 1, baseDir: base });
    // As if two keys' slugs collided: the branch records the key it was made for.
    git(repo, 'config', `branch.${wt.branch}.batonKey`, 'acme:api/7');
    await assert.rejects(
      prepareWorktree({ repoPath: repo, key: 'acme/api#7', epoch: 1, baseDir: base }),
      (error: unknown) => error instanceof ConflictError && /belongs to task acme:api\/7/.test(error.message),
    );
    assert.equal(existsSync(wt.path), true, "the other key's worktree is left alone");
  });

  test('continues a task from the branch an earlier version made for the same key', async () => {
    const { repo, base } = fixture();
    git(repo, 'branch', 'baton/jira-9');
    git(repo, 'config', 'branch.baton/jira-9.batonKey', 'JIRA-9');
    git(repo, 'worktree', 'add', '--quiet', join(base, 'old'), 'baton/jira-9');
    const work = commit(join(base, 'old'), 'old.txt', 'old\n');
    git(repo, 'worktree', 'remove', join(base, 'old'));
    const wt = await prepareWorktree({ repoPath: repo, key: 'JIRA-9', epoch: 2, baseDir: base });
    assert.equal(git(wt.path, 'rev-parse', 'HEAD'), work);
    const other = await prepareWorktree({ repoPath: repo, key: 'jira-9', epoch: 1, baseDir: base });
    assert.equal(git(other.path, 'rev-parse', 'HEAD'), git(repo, 'rev-parse', 'main'));
  });

  test('refuses a path that is not a git repository, saying so with a hint', async () => {
    const notRepo = mkdtempSync(join(home, 'plain-'));
    const check = (error: unknown): boolean =>
      error instanceof InvalidInputError &&
      /is not a git repository/.test(error.message) &&
      error.hint !== undefined;
    const baseDir = join(notRepo, 'w');
    await assert.rejects(prepareWorktree({ repoPath: notRepo, key: KEY, epoch: 1, baseDir }), check);
    await assert.rejects(
      retireWorktree({ repoPath: notRepo, path: join(notRepo, 'w'), branch: BRANCH }),
      check,
    );
    await assert.rejects(
      prepareWorktree({ repoPath: join(notRepo, 'missing'), key: KEY, epoch: 1, baseDir: notRepo }),
      InvalidInputError,
    );
  });

  test('removes a worktree whose work was pushed without writing an archive ref, and keeps the branch', async () => {
    const { repo, base, remote } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const work = commit(wt.path, 'fix.ts', 'export {};\n');
    // No upstream set: the remote-tracking ref alone tells that the commit is safe.
    git(wt.path, 'push', '--quiet', 'origin', BRANCH);
    const retired = await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    assert.deepEqual(retired, { removed: true, archivedRef: null });
    assert.equal(existsSync(wt.path), false);
    assert.equal(git(repo, 'rev-parse', BRANCH), work);
    assert.equal(git(remote, 'rev-parse', BRANCH), work);
    assert.equal(git(repo, 'for-each-ref', 'refs/baton/'), '');
  });

  test('archives unpushed commits to a ref before removal, and they stay reachable', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 4, baseDir: base });
    commit(wt.path, 'one.ts', '1\n');
    git(wt.path, 'push', '--quiet', '-u', 'origin', BRANCH);
    const unpushed = commit(wt.path, 'two.ts', '2\n');
    const retired = await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    assert.deepEqual(retired, { removed: true, archivedRef: `refs/baton/archive/${SLUG}/4` });
    assert.equal(existsSync(wt.path), false);
    assert.equal(git(repo, 'rev-parse', retired.archivedRef ?? ''), unpushed);
    // Even if the branch goes, the archive ref keeps the commit through a pruning gc.
    git(repo, 'branch', '--quiet', '-D', BRANCH);
    git(repo, 'reflog', 'expire', '--expire=now', '--all');
    git(repo, 'gc', '--quiet', '--prune=now');
    assert.equal(git(repo, 'cat-file', '-t', unpushed), 'commit');
    assert.equal(git(repo, 'show', `${unpushed}:two.ts`), '2');
  });

  test('archives uncommitted changes, untracked files included, on a commit whose first parent is HEAD', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const head = git(wt.path, 'rev-parse', 'HEAD');
    writeFileSync(join(wt.path, 'README.md'), 'hello, edited\n');
    writeFileSync(join(wt.path, 'staged.txt'), 'staged\n');
    git(wt.path, 'add', 'staged.txt');
    writeFileSync(join(wt.path, 'new.txt'), 'untracked\n');
    writeFileSync(join(wt.path, '.gitignore'), 'junk/\n');
    const retired = await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    assert.equal(retired.removed, true);
    assert.equal(retired.archivedRef, `refs/baton/archive/${SLUG}/1`);
    assert.equal(existsSync(wt.path), false);
    const ref = retired.archivedRef ?? '';
    assert.equal(git(repo, 'show', `${ref}:README.md`), 'hello, edited');
    assert.equal(git(repo, 'show', `${ref}:staged.txt`), 'staged');
    assert.equal(git(repo, 'show', `${ref}:new.txt`), 'untracked');
    assert.equal(git(repo, 'rev-parse', `${ref}^1`), head);
    assert.equal(git(repo, 'rev-parse', BRANCH), head, 'the branch is kept where it was');
  });

  test('archives commits made on a detached HEAD, which the kept branch does not hold', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const onBranch = commit(wt.path, 'a.txt', 'a');
    git(wt.path, 'checkout', '--quiet', '--detach');
    const detached = commit(wt.path, 'b.txt', 'b');
    const retired = await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    const ref = retired.archivedRef ?? '';
    assert.equal(git(repo, 'rev-parse', ref), detached);
    assert.equal(git(repo, 'merge-base', '--is-ancestor', onBranch, ref), '');
    assert.equal(git(repo, 'rev-parse', BRANCH), onBranch);
  });

  test('never overwrites an archive ref: a second archive of the same epoch gets its own', async () => {
    const { repo, base } = fixture();
    const first = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const a = commit(first.path, 'a.txt', 'a');
    const ra = await retireWorktree({ repoPath: repo, path: first.path, branch: first.branch });
    const again = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    const b = commit(again.path, 'b.txt', 'b');
    const rb = await retireWorktree({ repoPath: repo, path: again.path, branch: again.branch });
    assert.equal(ra.archivedRef, `refs/baton/archive/${SLUG}/1`);
    assert.equal(rb.archivedRef, `refs/baton/archive/${SLUG}/1-2`);
    assert.equal(git(repo, 'rev-parse', ra.archivedRef ?? ''), a);
    assert.equal(git(repo, 'rev-parse', rb.archivedRef ?? ''), b);
  });

  test('reports nothing removed for a worktree already retired, and refuses a directory it does not own', async () => {
    const { repo, base } = fixture();
    const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
    await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch });
    assert.deepEqual(await retireWorktree({ repoPath: repo, path: wt.path, branch: wt.branch }), {
      removed: false,
      archivedRef: null,
    });
    await assert.rejects(retireWorktree({ repoPath: repo, path: base, branch: BRANCH }), ConflictError);
    await assert.rejects(retireWorktree({ repoPath: repo, path: repo, branch: 'main' }), ConflictError);
  });
});
