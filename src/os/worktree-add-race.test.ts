/**
 * Worktrees of one repository made and retired by several processes at once (decision 0044): two
 * `baton up` on one machine, an agent's own git. git takes no lock over
 * `.git/worktrees`, and `git worktree add` writes a new entry's commondir empty first, then its
 * text: a git listing the worktrees in between died ("failed to read .git/worktrees/<id>/commondir",
 * CI54's fleet scenario). Real git, real processes: each works through its own Node process, so no
 * in-process queue orders them; git's reads of such an entry are retried (git.ts).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { runElsewhere } from '../../test/support/elsewhere.js';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { ARCHIVE_PREFIX, branchForKey, listClaimWorktrees, prepareWorktree } from './worktree.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));

const WORKTREE_JS = new URL('./worktree.js', import.meta.url).href;

/**
 * From `at` (epoch ms) on, `rounds` tasks one after another, as `baton up` runs them: a claim's
 * worktree with a draft, the next epoch's (which retires the first, archiving the draft), and
 * that one retired. Prints the failures' first lines as JSON.
 */
function workElsewhere(repo: string, base: string, id: number, rounds: number, at: number): Promise<string> {
  return runElsewhere(`
    import { writeFileSync } from 'node:fs';
    import { prepareWorktree, retireWorktree } from ${JSON.stringify(WORKTREE_JS)};
    const where = ${JSON.stringify({ repoPath: repo, baseDir: base })};
    while (Date.now() < ${at}) {}
    const failures = [];
    for (let round = 0; round < ${rounds}; round++) {
      const key = 'p${id}/task-' + round;
      try {
        const first = await prepareWorktree({ ...where, key, epoch: 1 });
        writeFileSync(first.path + '/draft.txt', key + '\\n');
        const second = await prepareWorktree({ ...where, key, epoch: 2 });
        await retireWorktree({ repoPath: where.repoPath, path: second.path, branch: second.branch });
      } catch (error) {
        failures.push(error.message.split('\\n')[0]);
      }
    }
    console.log(JSON.stringify(failures));`);
}

/** From `at` on, lists the claim worktrees as the sweep does until `stop` exists; the failures as JSON. */
function sweepElsewhere(repo: string, stop: string, at: number): Promise<string> {
  return runElsewhere(`
    import { existsSync } from 'node:fs';
    import { listClaimWorktrees } from ${JSON.stringify(WORKTREE_JS)};
    while (Date.now() < ${at}) {}
    const failures = [];
    while (!existsSync(${JSON.stringify(stop)})) {
      await listClaimWorktrees(${JSON.stringify(repo)}).catch((error) => failures.push(error.message));
    }
    console.log(JSON.stringify(failures));`);
}

const batonFiles = (repo: string): string[] =>
  readdirSync(join(repo, '.git')).filter((name) => name.startsWith('baton-'));

const PROCESSES = 4;
const ROUNDS = 6;
/** Processes listing the worktrees meanwhile, as each `baton up`'s sweep does. */
const SWEEPERS = 3;

describe('worktrees of one repository changed by several processes at once', () => {
  test(`${PROCESSES} processes making and retiring worktrees while ${SWEEPERS} list them all succeed`, async () => {
    const { repo, base } = makeRepo(home);
    const stop = join(home, `stop-${basename(base)}-${Date.now()}`);
    const at = Date.now() + 1500;
    const sweeping = Promise.all(Array.from({ length: SWEEPERS }, () => sweepElsewhere(repo, stop, at)));
    const answers = await Promise.all(
      Array.from({ length: PROCESSES }, (_, id) => workElsewhere(repo, base, id, ROUNDS, at)),
    );
    writeFileSync(stop, '');
    answers.push(...(await sweeping));
    assert.deepEqual(answers, Array<string>(PROCESSES + SWEEPERS).fill('[]'), answers.join('\n'));
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
    // Every task's draft archived once, from its first epoch; nothing left locked or claimed.
    const refs = git(repo, 'for-each-ref', '--format=%(refname)', ARCHIVE_PREFIX).split('\n');
    assert.equal(refs.length, PROCESSES * ROUNDS, refs.join('\n'));
    for (let id = 0; id < PROCESSES; id++) {
      for (let round = 0; round < ROUNDS; round++) {
        const key = `p${id}/task-${round}`;
        const ref = `${ARCHIVE_PREFIX}${branchForKey(key).replace(/^baton\//, '')}/1`;
        assert.equal(git(repo, 'show', `${ref}:draft.txt`), key);
      }
    }
    assert.deepEqual(batonFiles(repo), []);
  });

  test('git reading an entry another git is still writing (commondir empty) is asked again', async () => {
    // `git worktree add` by a process that takes no lock (an agent's, a person's) writes the new
    // entry's commondir empty, then its text; a git listing the worktrees in between dies. That
    // window is microseconds wide; here the entry stays half-written for 800 ms, within git()'s
    // retries (1.5 s). A slow start can only make the first try succeed, never the test fail.
    const { repo, base } = makeRepo(home);
    const other = await prepareWorktree({ repoPath: repo, key: 'lock/5', epoch: 1, baseDir: base });
    const commondir = join(repo, '.git', 'worktrees', basename(other.path), 'commondir');
    writeFileSync(commondir, '');
    assert.throws(() => git(repo, 'worktree', 'list'), /failed to read .*\/commondir/);
    let written = setTimeout(() => writeFileSync(commondir, '../..\n'), 800);
    try {
      const wt = await prepareWorktree({ repoPath: repo, key: 'lock/6', epoch: 1, baseDir: base });
      assert.equal(git(wt.path, 'rev-parse', '--abbrev-ref', 'HEAD'), wt.branch);
      // The sweep's listing, which takes no lock.
      writeFileSync(commondir, '');
      written = setTimeout(() => writeFileSync(commondir, '../..\n'), 800);
      assert.equal((await listClaimWorktrees(repo)).length, 2);
    } finally {
      clearTimeout(written);
    }
  });
});
