/**
 * The worktree sweep (worktree-sweep.ts) on a real store and a real git repository: what a dead
 * runner left is retired and archived once its claim is over, and nothing else is touched.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, isolateGit, makeRepo } from '../../test/support/git.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { openStore } from '../store/open.js';
import { prepareWorktree } from '../os/worktree.js';
import { sweepWorktrees } from './worktree-sweep.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));

test('retires the worktrees of claims that are over, archiving drafts; live claims and foreign ones stay', async () => {
  const { repo, base } = makeRepo(home);
  const store = await openStore(await sqliteDatabase().fresh());
  try {
    await store.workspaces.add({ name: 'repo', path: repo, kind: 'worktree' });
    const agent = await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
    const claimed = async (key: string) => {
      await store.tasks.add({ key });
      const c = await store.claims.acquire({ key, session: agent.id });
      assert.ok(c.ok);
      const wt = await prepareWorktree({ repoPath: repo, key, epoch: c.claim.epoch, baseDir: base });
      return { wt, epoch: c.claim.epoch };
    };
    const live = await claimed('live-1');
    const over = await claimed('cancelled-1');
    writeFileSync(join(over.wt.path, 'draft.md'), 'half done\n');
    await store.claims.release({
      key: 'cancelled-1',
      session: agent.id,
      epoch: over.epoch,
      outcome: 'failed',
    });
    git(repo, 'worktree', 'add', '--quiet', '-b', 'mine', join(base, 'mine'));

    const lines: string[] = [];
    const swept = await sweepWorktrees(store, (l) => lines.push(l));
    assert.deepEqual(
      swept.map((s) => [s.key, s.epoch]),
      [['cancelled-1', 1]],
      lines.join('\n'),
    );
    assert.equal(existsSync(over.wt.path), false);
    assert.equal(git(repo, 'show', `${swept[0]?.archivedRef ?? ''}:draft.md`), 'half done');
    assert.equal(existsSync(live.wt.path), true, 'the live claim keeps its checkout');
    assert.equal(existsSync(join(base, 'mine')), true, 'a worktree Baton did not make is left alone');
    assert.deepEqual(await sweepWorktrees(store, () => undefined), [], 'a second sweep finds nothing');
  } finally {
    await store.close();
  }
});
