/**
 * `baton up --agent-uids` killed by SIGKILL while an agent runs (decision 0025, "A runner that
 * dies"): the worktree it had lent to the agent's uid is still the agent's, and the agent may
 * have pointed the worktree's `.git` file anywhere. The next `baton up` on the host takes it back
 * from the record the dead runner left in `.baton/lent/` before its sweep runs the runner's git
 * there: every file is the runner's again and the git pointers are what they were when lent, so
 * the sweep archives the agent's uncommitted work and removes the worktree, as for any runner
 * that died. And two `baton up` on one machine: a range overlapping a live runner's is refused
 * (exit 3), a dead runner's is not. Needs root (CI runs as root); SQLite only: nothing here
 * depends on the engine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Workspaces } from '../../src/coordinator/workspaces.js';
import { sqliteDatabase } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

isolateGit();
const NEEDS_ROOT = process.getuid?.() === 0 ? false : 'needs root: it runs an agent as uid 47011';
const UIDS = [47011, 47012];

/** Paths below `path` (itself included) owned by one of `uids`, never following a link. */
function ownedBy(path: string, uids: readonly number[]): string[] {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return [];
  const here = uids.includes(stat.uid) ? [path] : [];
  if (!stat.isDirectory()) return here;
  return [...here, ...readdirSync(path).flatMap((entry) => ownedBy(join(path, entry), uids))];
}

/** Live processes whose real uid is one of `uids`. */
function processesOf(uids: readonly number[]): string[] {
  return readdirSync('/proc').filter((name) => {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      return uids.includes(Number(/^Uid:\s+(\d+)/m.exec(status)?.[1])) && !/^State:\s+Z/m.test(status);
    } catch {
      return false;
    }
  });
}

describe('baton up --agent-uids, its runner killed mid-run', () => {
  test(
    'the next baton up on the host takes the lent worktree back, its git pointers restored, and retires it with the work archived',
    { skip: NEEDS_ROOT },
    async () => {
      const c = await clusterFixture(sqliteDatabase());
      try {
        chmodSync(c.dir, 0o711);
        const { repo } = makeRepo(c.dir);
        chmodSync(join(repo, '..'), 0o711);
        const meet = mkdtempSync(join(tmpdir(), 'baton-meet-'));
        chmodSync(meet, 0o1777);
        const workspaces = new Workspaces(c.store);
        await workspaces.addWorkspace({ name: 'repo', path: repo, kind: 'worktree' });
        await workspaces.addTask({ key: 'crash', workspace: 'repo' });
        // Uncommitted work, then the worktree's `.git` pointed elsewhere, then a long wait.
        const command = [
          'echo unsaved > wip.txt',
          `mkdir -p ${meet}/elsewhere && echo "gitdir: ${meet}/elsewhere" > .git`,
          `echo $(id -u) > ${meet}/started`,
          'sleep 600',
        ].join(' && ');
        await c.store.jobs.enqueue({ key: 'crash', command, attemptMax: 1 });
        const flags = ['--agent-uids', `${UIDS[0]}-${UIDS[1]}`];
        const first = c.up('h1', ...flags);
        await waitUntil(
          () => existsSync(join(meet, 'started')),
          30_000,
          `the agent to start\n${first.log()}`,
        );
        assert.equal(readFileSync(join(meet, 'started'), 'utf8').trim(), String(UIDS[0]));
        const [job] = await c.store.jobs.list({ key: 'crash' });
        const worktree = join(
          c.dir,
          '.baton',
          'worktrees',
          readdirSync(join(c.dir, '.baton', 'worktrees'))[0] ?? '',
        );
        assert.ok(ownedBy(worktree, UIDS).length > 0, 'lent while the agent runs');
        first.signal('SIGKILL');
        await first.exited();

        const second = c.up('h1', ...flags);
        await second.waitRunning(30_000);
        // The directory goes before the line saying so is written: wait for the line.
        const retired =
          /retired worktree .* of crash epoch 1, whose claim is over: work archived to refs\/baton\/archive\//;
        await second.waitForLog(retired, 30_000);
        assert.equal(existsSync(worktree), false);
        const log = second.log();
        assert.match(
          log,
          new RegExp(`took back worktree ${worktree} from uid ${UIDS[0]}, lent by a runner that is gone`),
        );
        const archived = /work archived to (refs\/baton\/archive\/\S+),/.exec(log)?.[1] ?? '';
        assert.match(git(repo, 'show', `${archived}:wip.txt`), /unsaved/);
        assert.deepEqual(
          ownedBy(join(repo, '.git'), UIDS),
          [],
          "nothing of the repository is the agent uid's",
        );
        assert.deepEqual(
          readdirSync(join(c.dir, '.baton', 'lent')),
          [],
          'the record is gone once taken back',
        );
        assert.equal((await c.store.jobs.get(job?.id ?? 0))?.status, 'failed');
        assert.deepEqual(processesOf(UIDS), [], 'no process of the pool is left');
      } finally {
        await c.close();
      }
    },
  );
});

describe('two baton up --agent-uids on one machine', () => {
  test(
    'a range overlapping a live runner’s is refused (exit 3, nothing joined); a disjoint one, or a dead runner’s (its HOMEs removed), is not',
    { skip: NEEDS_ROOT },
    async () => {
      const c = await clusterFixture(sqliteDatabase());
      try {
        chmodSync(c.dir, 0o711);
        const registry = '/run/baton/agent-uids';
        const first = c.up('h1', '--agent-uids', '47021-47022');
        await first.waitRunning();
        assert.ok(
          readdirSync(registry).some((name) => name.startsWith(`${first.pid}-`)),
          'registered',
        );
        const refused = await c.baton('up', '--host', 'h2', '--agent-uids', '47022-47024');
        assert.equal(refused.code, 3, refused.stdout + refused.stderr);
        assert.match(
          refused.stderr,
          new RegExp(
            `--agent-uids 47022-47024 overlaps 47021-47022, held by the baton up running as pid ${first.pid} on this machine`,
          ),
        );
        assert.doesNotMatch(refused.stdout, /joined as session/);
        assert.deepEqual(
          (await c.store.hosts.list()).map((host) => host.name),
          ['h1'],
        );
        const disjoint = c.up('h2', '--agent-uids', '47023-47024');
        await disjoint.waitRunning();
        disjoint.signal('SIGTERM');
        await disjoint.exited();
        assert.ok(
          !readdirSync(registry).some((name) => name.startsWith(`${disjoint.pid}-`)),
          'released at exit',
        );
        const [mine] = readdirSync(registry).filter((name) => name.startsWith(`${first.pid}-`));
        const { homes } = JSON.parse(readFileSync(join(registry, mine ?? ''), 'utf8')) as { homes: string };
        assert.ok(existsSync(homes), `its agents' HOMEs are in ${homes}`);
        first.signal('SIGKILL');
        await first.exited();
        const after = c.up('h3', '--agent-uids', '47021-47022');
        await after.waitRunning();
        assert.equal(existsSync(homes), false, "the dead runner's HOMEs removed with its file");
        assert.ok(
          !readdirSync(registry).some((name) => name.startsWith(`${first.pid}-`)),
          'the dead one removed',
        );
      } finally {
        await c.close();
      }
    },
  );
});
