/**
 * A coding agent under `baton up` (serving HTTP, as by default) commits and pushes its task's
 * branch, with real processes on both engines. The agent holds no database credential, only its
 * API token; the pre-push guard asks the API with that token. Before, it read the database its
 * worktree's claim record names, without the password: on a PostgreSQL with a password every
 * push was refused ("client password must be a string"), found by the fleet scenario.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isTerminalJobState } from '../../src/core/job.js';
import { Workspaces } from '../../src/coordinator/workspaces.js';
import { branchForKey } from '../../src/os/worktree.js';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, clusterFixture } from './cluster-support.js';

isolateGit();
const KEY = 'gh:acme/api#77';

for (const db of bothEngines()) {
  describe(`${db.name}: an agent's push`, () => {
    test('a coding agent reaching Baton over HTTP pushes its branch through the guard, holding no database password', async () => {
      const c = await clusterFixture(db);
      try {
        const { repo, remote } = makeRepo(c.dir);
        const workspaces = new Workspaces(c.store);
        await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
        await workspaces.addTask({ key: KEY, workspace: 'repo' });
        const work = 'echo fix > fix.txt && git add fix.txt && git commit -qm fix && git push origin HEAD';
        await c.store.jobs.enqueue({ key: KEY, command: work, attemptMax: 1 });
        const up = c.up('a', ...STEADY);
        await waitUntil(
          async () => isTerminalJobState((await c.store.jobs.list({ key: KEY }))[0]?.status ?? 'queued'),
          60_000,
          'the job to end',
        );
        const [job] = await c.store.jobs.list({ key: KEY });
        const logs = join(c.dir, '.baton', 'logs');
        const output = readdirSync(logs).map((f) => readFileSync(join(logs, f), 'utf8'));
        assert.equal(job?.status, 'done', `${job?.reason ?? ''}\n${output.join('\n')}\n${up.log()}`);
        assert.match(output.join('\n'), /push allowed: session \d+ holds gh:acme\/api#77 at epoch 1/);
        const pushed = git(remote, 'show', `refs/heads/${branchForKey(KEY)}:fix.txt`);
        assert.equal(pushed, 'fix');
      } finally {
        await c.close();
      }
    });
  });
}
