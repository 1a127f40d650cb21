/**
 * The machine's registry of agent uid ranges (agent-uid-ranges.ts) as lending reads it: a
 * repository whose directories are lent to the group of another live runner's agents is not lent
 * to this runner's group, which would take them from those agents mid-run; once that runner is
 * gone, it is. Real processes, a real repository; needs root (it lends to uids 47031 and 47041).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isolateGit, makeRepo } from '../../test/support/git.js';
import { processIdentity } from './process-ancestry.js';
import { prepareWorktree } from './worktree.js';
import { lendWorktree, takeBackWorktree } from './worktree-lend.js';

const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));
const NEEDS_ROOT =
  process.getuid?.() === 0 ? false : 'needs root: it lends worktrees to uids 47031 and 47041';
const REGISTRY = '/run/baton/agent-uids';

describe("a repository lent to another live runner's agents", () => {
  test(
    'is not lent to a second group while that runner runs; once it is gone, it is',
    { skip: NEEDS_ROOT },
    async () => {
      chmodSync(home, 0o711);
      const { repo, base } = makeRepo(home);
      chmodSync(join(repo, '..'), 0o711);
      const first = await prepareWorktree({ repoPath: repo, key: 'GRP-1', epoch: 1, baseDir: base });
      const second = await prepareWorktree({ repoPath: repo, key: 'GRP-2', epoch: 1, baseDir: base });
      const runner = spawn('sleep', ['60']); // the other baton up, holding 47031-47032
      const live = processIdentity(runner.pid ?? 0);
      assert.ok(live !== null, 'the process runs');
      const { startTicks } = live;
      const entry = join(REGISTRY, `${runner.pid}-${startTicks}.json`);
      mkdirSync(REGISTRY, { recursive: true, mode: 0o700 });
      writeFileSync(
        entry,
        JSON.stringify({ first: 47031, last: 47032, gid: 47031, pid: runner.pid, startTicks }),
      );
      try {
        const theirs = lendWorktree(first.path, first.branch, 47031, 47031);
        const objects = join(repo, '.git', 'objects', '00');
        assert.equal(statSync(objects).gid, 47031);
        assert.throws(
          () => lendWorktree(second.path, second.branch, 47041, 47041),
          new RegExp(
            `the repository \\S+ is lent to group 47031, the agents of the baton up running as pid ${runner.pid} ` +
              `\\(--agent-uids 47031-47032\\): two runners' agents cannot share it at once`,
          ),
        );
        assert.equal(statSync(objects).gid, 47031, 'still theirs');
        assert.equal(statSync(second.path).uid, 0, 'nothing of the second worktree lent');
        takeBackWorktree(theirs, 0, 0);
        runner.kill('SIGKILL');
        await new Promise((resolve) => runner.once('exit', resolve));
        const mine = lendWorktree(second.path, second.branch, 47041, 47041);
        assert.equal(statSync(objects).gid, 47041, 'a stopped runner’s group is taken over');
        takeBackWorktree(mine, 0, 0);
      } finally {
        rmSync(entry, { force: true });
        runner.kill('SIGKILL');
      }
    },
  );
});
