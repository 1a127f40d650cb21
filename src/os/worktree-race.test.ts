/**
 * Several `baton up` on one machine retire the same worktree at once: one's sweep and another's
 * next claim of the task (found by the fleet scenario, test/e2e/fleet-scenario.test.ts, where the
 * loser's claim failed for good with "is not a working tree"). Real git, real processes: each
 * retires through its own Node process, so no in-process queue orders them.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { runElsewhere } from '../../test/support/elsewhere.js';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { ARCHIVE_PREFIX, prepareWorktree, retireWorktree } from './worktree.js';

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
  return runElsewhere(script);
}

/** A worktree with a draft, and the file that claims its retirement (worktree-claim.ts). */
async function draftWorktree(): Promise<{ repo: string; path: string; branch: string; claim: string }> {
  const { repo, base } = makeRepo(home);
  const wt = await prepareWorktree({ repoPath: repo, key: KEY, epoch: 1, baseDir: base });
  writeFileSync(join(wt.path, 'draft.txt'), 'draft\n');
  const listed = git(repo, 'worktree', 'list', '--porcelain').split('\n\n')[1]?.split('\n')[0] ?? '';
  const digest = createHash('sha256')
    .update(listed.replace(/^worktree /, ''))
    .digest('hex')
    .slice(0, 16);
  return { repo, ...wt, claim: join(repo, '.git', `baton-retiring-${digest}`) };
}

describe('worktrees retired by several processes at once', () => {
  test('each process retiring the same worktree succeeds, exactly one removes it and archives its draft', async () => {
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
      const removers = results.filter((r) => r.removed);
      assert.equal(removers.length, 1, answers.join('\n'));
      assert.equal(git(repo, 'worktree', 'list', '--porcelain').split('\n')[0], `worktree ${repo}`);
      assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
      // One archive, named by the one that removed it; the others wrote none.
      const ref = removers[0]?.archivedRef ?? '';
      assert.deepEqual(git(repo, 'for-each-ref', '--format=%(refname)', ARCHIVE_PREFIX).split('\n'), [ref]);
      assert.equal(git(repo, 'show', `${ref}:draft.txt`), `round ${round}`);
      assert.ok(
        results.every((r) => r.removed || r.archivedRef === null),
        answers.join('\n'),
      );
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

  test("a removal git reports failed after unregistering the worktree still counts as this process's", async () => {
    // What made every process of the first test say removed: false: git deletes the worktree and
    // its entry, fails on a file of the entry ("failed to delete '.git/worktrees/<id>': Directory
    // not empty", when another process wrote a temporary index there) and exits 255. A git on PATH
    // that does just that after a real removal stands in for that race.
    const { repo, path, branch } = await draftWorktree();
    const bin = mkdtempSync(join(home, 'bin-'));
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const script = `#!/bin/sh
if [ "$1 $2" = "worktree remove" ]; then "${realGit}" "$@"; echo "error: failed to delete" >&2; exit 255; fi
exec "${realGit}" "$@"
`;
    writeFileSync(join(bin, 'git'), script);
    chmodSync(join(bin, 'git'), 0o755);
    const path0 = process.env['PATH'];
    process.env['PATH'] = `${bin}:${path0 ?? ''}`;
    try {
      const retired = await retireWorktree({ repoPath: repo, path, branch });
      assert.equal(retired.removed, true);
      assert.equal(git(repo, 'show', `${retired.archivedRef ?? ''}:draft.txt`), 'draft');
    } finally {
      process.env['PATH'] = path0;
    }
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
  });

  test('waits while a live process holds the claim, then finds the worktree retired by it', async () => {
    const { repo, path, branch, claim } = await draftWorktree();
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(claim, `${holder.pid} ${hostname()}`);
      let settled = false;
      const retiring = retireWorktree({ repoPath: repo, path, branch }).finally(() => (settled = true));
      await new Promise((done) => setTimeout(done, 500));
      assert.equal(settled, false, 'it went ahead while another process held the claim');
      git(repo, 'worktree', 'remove', '--force', path);
      rmSync(claim);
      assert.deepEqual(await retiring, { removed: false, archivedRef: null });
      assert.equal(git(repo, 'for-each-ref', ARCHIVE_PREFIX), '');
    } finally {
      holder.kill();
    }
  });

  test('takes over a claim naming this very process: a leftover of an earlier life with its pid', async () => {
    const { repo, path, branch, claim } = await draftWorktree();
    writeFileSync(claim, `${process.pid} ${hostname()}`);
    const retired = await retireWorktree({ repoPath: repo, path, branch });
    assert.equal(retired.removed, true);
    assert.equal(existsSync(claim), false);
  });

  test('takes over a claim whose process died, and retires the worktree', async () => {
    const { repo, path, branch, claim } = await draftWorktree();
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(claim, `${dead} ${hostname()}`);
    const retired = await retireWorktree({ repoPath: repo, path, branch });
    assert.equal(retired.removed, true);
    assert.equal(git(repo, 'show', `${retired.archivedRef ?? ''}:draft.txt`), 'draft');
    assert.equal(existsSync(claim), false);
  });
});
