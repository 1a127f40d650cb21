/**
 * Several `baton up` on one machine retire the same worktree at once: one's sweep and another's
 * next claim of the task (found by the fleet scenario, test/e2e/fleet-scenario.test.ts, where the
 * loser's claim failed for good with "is not a working tree"). Real git, real processes: each
 * retires through its own Node process, so no in-process queue orders them.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { prepareWorktree } from './worktree.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));

const WORKTREE_JS = new URL('./worktree.js', import.meta.url).href;
const KEY = 'fleet/code-1';

/** Retires the worktree from a process of its own, starting at `at` (epoch ms); its answer or error. */
function retireElsewhere(repo: string, path: string, branch: string, at: number): Promise<string> {
  const script = `
    import { retireWorktree } from ${JSON.stringify(WORKTREE_JS)};
    while (Date.now() < ${at}) {}
    retireWorktree(${JSON.stringify({ repoPath: repo, path, branch })}).then(
      (r) => console.log(JSON.stringify(r)),
      (e) => { console.log('error: ' + e.message); process.exitCode = 1; },
    );`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: process.env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', () => resolve(out.trim()));
  });
}

describe('worktrees retired by several processes at once', () => {
  test('each process retiring the same worktree succeeds, one removes it, and its draft is archived', async () => {
    for (let round = 0; round < 3; round++) {
      const { repo, base } = makeRepo(home);
      const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
      writeFileSync(join(wt.path, 'draft.txt'), `round ${round}\n`);
      const at = Date.now() + 1500;
      const answers = await Promise.all(
        [1, 2, 3, 4].map(() => retireElsewhere(repo, wt.path, wt.branch, at)),
      );
      const results = answers.map((a) => {
        assert.ok(a.startsWith('{'), `a retirement failed: ${a}`);
        return JSON.parse(a) as { removed: boolean; archivedRef: string | null };
      });
      assert.ok(results.filter((r) => r.removed).length >= 1, answers.join('\n'));
      assert.equal(git(repo, 'worktree', 'list', '--porcelain').split('\n')[0], `worktree ${repo}`);
      assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
      const ref = results.find((r) => r.removed)?.archivedRef ?? '';
      assert.equal(git(repo, 'show', `${ref}:draft.txt`), `round ${round}`);
    }
  });

  test('git failing because another process removed a worktree under it is asked again', async () => {
    // A second `baton up` removing a worktree while git reads the list makes git die with
    // "Invalid path '<repo>/.git/worktrees/<id>': No such file or directory" (seen in the fleet
    // scenario, where the job failed for good). That window is microseconds wide. An entry whose
    // common-dir path leads through a missing entry makes git die with those very words until
    // the entry is gone: here 800 ms in, within git()'s retries (1.5 s), as the other process's
    // removal would. A slow start can only make the first try succeed, never the test fail.
    const { repo, base } = makeRepo(home);
    const other = await prepareWorktree({ repoPath: repo, key: 'fleet/code-2', epoch: 1, baseDir: base });
    const admin = join(repo, '.git', 'worktrees', basename(other.path));
    writeFileSync(join(admin, 'commondir'), '../../worktrees/vanished/../..\n');
    assert.throws(() => git(repo, 'worktree', 'list'), /Invalid path '[^']*\/worktrees\/vanished'/);
    const removal = setTimeout(() => {
      rmSync(admin, { recursive: true, force: true });
      rmSync(other.path, { recursive: true, force: true });
    }, 800);
    try {
      const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
      assert.equal(git(wt.path, 'rev-parse', '--abbrev-ref', 'HEAD'), wt.branch);
      assert.deepEqual(readdirSync(join(repo, '.git', 'worktrees')), [basename(wt.path)]);
    } finally {
      clearTimeout(removal);
    }
  });
});
