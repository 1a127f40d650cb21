/**
 * Issue 14, item 2: a dead runner's worktree is retired, its uncommitted work archived, when its
 * job does not run again. Real `baton up` processes on both engines, a real git repository.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { agentStarted, clusterFixture, type ClusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

isolateGit();

async function ok(c: ClusterFixture, ...args: string[]): Promise<string> {
  const r = await c.baton(...args);
  assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const worktrees = (repo: string): string[] =>
  git(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '));

for (const db of bothEngines()) {
  describe(`${db.name}: worktrees of dead runners`, () => {
    test('a job cancelled while its host was down has its worktree retired and its draft archived when the host returns', async () => {
      const c = await clusterFixture(db);
      try {
        const { repo } = makeRepo(c.dir);
        await ok(c, 'workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree');
        await ok(c, 'task', 'add', 'gh:acme/api#9', '--workspace', 'repo');
        await ok(c, 'enqueue', 'gh:acme/api#9', '--command', 'echo half done > draft.txt && sleep 60');
        const first = c.up('a');
        await waitUntil(() => agentStarted(c.store, 'gh:acme/api#9'), 30_000, 'the agent to start');
        await waitUntil(() => worktrees(repo).length === 2, 10_000, 'the worktree');
        first.signal('SIGKILL');
        await first.exited();
        const [job] = await c.store.jobs.list({ key: 'gh:acme/api#9' });
        await ok(c, 'cancel', String(job?.id));

        const again = c.up('a');
        await again.waitForLog(/retired worktree .* of gh:acme\/api#9 epoch 1, whose claim is over/, 30_000);
        assert.deepEqual(worktrees(repo), [`worktree ${repo}`], 'no worktree is left registered');
        const refs = git(repo, 'for-each-ref', '--format=%(refname)', 'refs/baton/archive/').split('\n');
        assert.equal(refs.length, 1, refs.join('\n'));
        assert.equal(git(repo, 'show', `${refs[0] ?? ''}:draft.txt`), 'half done');
        assert.equal((await c.store.jobs.list({ key: 'gh:acme/api#9' }))[0]?.status, 'cancelled');
      } finally {
        await c.close();
      }
    });
  });
}
