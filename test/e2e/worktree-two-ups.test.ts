/**
 * Issue 14, item 3: two `baton up` on one machine, started from different directories (each with
 * its own .baton/worktrees), against one repository. One dies holding a task's worktree; the
 * task's retry on the other retires that worktree where the dead one made it, archives its
 * uncommitted draft, and succeeds. Real processes on both engines, real git.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Workspaces } from '../../src/coordinator/workspaces.js';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture, FAST } from './cluster-support.js';
import { refsUnder, registeredWorktrees } from './fleet-support.js';

isolateGit();
const KEY = 'gh:acme/api#3';
const ARGS = ['--lease-ttl', '2', '--retry-interval', '0.5', '--heartbeat-interval', '0.5'];

for (const db of bothEngines()) {
  describe(`${db.name}: two baton up on one machine`, () => {
    test("the retry on the other baton up retires the dead one's worktree in its directory, archives its draft and succeeds", async () => {
      const c = await clusterFixture(db);
      try {
        const { repo } = makeRepo(c.dir);
        const workspaces = new Workspaces(c.store);
        await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
        await workspaces.addTask({ key: KEY, workspace: 'repo' });
        // The first epoch writes its draft and works on; a later one writes its own and ends.
        const command =
          'echo "draft of epoch $BATON_EPOCH" > draft.txt; [ "$BATON_EPOCH" -gt 1 ] || sleep 120';
        await c.store.jobs.enqueue({ key: KEY, command, attemptMax: 3 });
        const dirA = join(c.dir, 'one');
        const dirB = join(c.dir, 'two');
        for (const d of [dirA, dirB]) mkdirSync(d, { recursive: true });
        const stale = ['--stale-after', String(FAST.staleMs / 1000)];
        const a = c.upAt(dirA, {}, 'a', [...ARGS, ...stale]);
        await waitUntil(() => agentStarted(c.store, KEY), 60_000, 'the agent to start on a');
        assert.equal(registeredWorktrees(repo).length, 2);
        assert.ok(registeredWorktrees(repo)[1]?.startsWith(join(dirA, '.baton', 'worktrees')));
        a.signal('SIGKILL');
        await a.exited();

        const b = c.upAt(dirB, {}, 'b', [...ARGS, ...stale]);
        await waitUntil(
          async () => (await c.store.jobs.list({ key: KEY }))[0]?.status === 'done',
          60_000,
          `the retry on b to succeed\n${b.log()}`,
        );
        const [job] = await c.store.jobs.list({ key: KEY });
        assert.equal(job?.epoch !== undefined && job.epoch > 1, true);
        await waitUntil(() => registeredWorktrees(repo).length === 1, 15_000, 'no worktree left');
        const refs = refsUnder(repo, 'refs/baton/archive/');
        const drafts = refs.map((r) => git(repo, 'show', `${r}:draft.txt`));
        assert.ok(
          drafts.includes('draft of epoch 1'),
          `the dead run's draft is archived: ${drafts.join(', ')}`,
        );
      } finally {
        await c.close();
      }
    });
  });
}
