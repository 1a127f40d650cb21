/**
 * The workspace model end to end (docs/architecture.md#lock-per-workspace), with real `baton up`
 * processes on both engines: two coding jobs on one workspace take turns while cognitive jobs run
 * beside them, an unresolved coding job is skipped visibly and runs once its workspace is
 * configured, and a `worktree` workspace gives the run its own checkout, retired when it ends with
 * the unpushed work kept.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Job } from '../../src/core/job.js';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { treeMembers } from '../../src/os/process-tree.js';
import { branchForKey } from '../../src/os/worktree.js';
import { isAlive, type ClusterFixture, withCluster } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

isolateGit();

async function ok(c: ClusterFixture, ...args: string[]): Promise<string> {
  const r = await c.baton(...args);
  assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function jobOf(c: ClusterFixture, key: string): Promise<Job> {
  const [job] = await c.store.jobs.list({ key });
  assert.ok(job !== undefined, `a job for ${key}`);
  return job;
}

const done = async (c: ClusterFixture, keys: readonly string[]) =>
  (await Promise.all(keys.map((k) => jobOf(c, k)))).every((j) => j.status === 'done');

/** The running interval of a finished job. */
function span(job: Job): [number, number] {
  assert.ok(job.startedAt !== null && job.finishedAt !== null, `job ${job.id} ran`);
  return [job.startedAt, job.finishedAt];
}

const overlaps = (a: [number, number], b: [number, number]): boolean => a[0] < b[1] && b[0] < a[1];

for (const db of bothEngines()) {
  describe(`${db.name}: workspaces under baton up`, () => {
    test('two coding jobs on one workspace take turns, the second waiting visibly, while cognitive jobs run beside them', () =>
      withCluster(db, async (c) => {
        const ws = join(c.dir, 'ws');
        mkdirSync(ws);
        await ok(c, 'workspace', 'add', 'api', '--path', ws);
        await ok(c, 'agent', 'add', 'dev', '--role', 'backend-engineer', '--workspace', 'api');
        // One by the task's own binding, one by its assignee's coding role and workspace.
        await ok(c, 'task', 'add', 'code-1', '--requires-filesystem', '--workspace', 'api');
        await ok(c, 'task', 'add', 'code-2', '--assignee', 'dev');
        await ok(c, 'task', 'add', 'think-1');
        await ok(c, 'task', 'add', 'think-2', '--assignee', 'someone');
        const coding = 'pwd > "ran-$BATON_KEY"; sleep 2';
        await ok(c, 'enqueue', 'code-1', '--command', coding);
        await ok(c, 'enqueue', 'code-2', '--command', coding);
        await ok(c, 'enqueue', 'think-1', '--command', 'pwd > "ran-$BATON_KEY"; sleep 1.5');
        await ok(c, 'enqueue', 'think-2', '--command', 'pwd > "ran-$BATON_KEY"; sleep 1.5');
        c.up('a', '--slots', '4');
        c.up('b', '--slots', '4');

        // The first coding job runs; the second waits, saying for what and behind whom.
        let seen = '';
        await waitUntil(
          async () => {
            const [one, two] = [await jobOf(c, 'code-1'), await jobOf(c, 'code-2')];
            const [running, waiting] = one.status === 'running' ? [one, two] : [two, one];
            if (running.status !== 'running' || waiting.status !== 'queued') return false;
            seen = waiting.reason ?? '';
            return seen === `waiting for workspace api, held by job ${running.id}`;
          },
          20_000,
          'one coding job running and the other waiting for the workspace',
        );
        const list = await ok(c, 'queue', 'list');
        assert.match(list, /waiting for workspace api, held by job \d+/);

        await waitUntil(
          () => done(c, ['code-1', 'code-2', 'think-1', 'think-2']),
          40_000,
          'every job to finish',
        );
        const [one, two] = [await jobOf(c, 'code-1'), await jobOf(c, 'code-2')];
        const [first, second] = (one.startedAt ?? 0) < (two.startedAt ?? 0) ? [one, two] : [two, one];
        assert.ok(!overlaps(span(first), span(second)), 'the coding jobs never ran at the same time');
        for (const key of ['code-1', 'code-2']) {
          assert.equal(
            readFileSync(join(ws, `ran-${key}`), 'utf8').trim(),
            ws,
            `${key} ran in the workspace`,
          );
        }
        for (const key of ['think-1', 'think-2']) {
          const job = await jobOf(c, key);
          // Beside either coding run: on a loaded machine a cognitive job may start after the first
          // one ended, and still run while the workspace is held by the second.
          assert.ok(
            overlaps(span(job), span(first)) || overlaps(span(job), span(second)),
            `${key} ran while the workspace was locked`,
          );
          assert.equal(
            readFileSync(join(c.dir, `ran-${key}`), 'utf8').trim(),
            c.dir,
            `${key} ran outside it`,
          );
          const types = (await c.store.audit.list({ jobId: job.id })).map((e) => e.type);
          assert.ok(!types.includes('lock:acquired'), `${key} never touched a lock`);
        }
        // One grant and one release per coding run, the second granted after the first released.
        const locks = (await c.store.audit.list({ limit: 1000 })).filter((e) => e.type.startsWith('lock:'));
        assert.deepEqual(
          locks.map((e) => [e.type, e.jobId, e.epoch]),
          [
            ['lock:acquired', first.id, 1],
            ['lock:released', first.id, 1],
            ['lock:acquired', second.id, 2],
            ['lock:released', second.id, 2],
          ],
        );
        assert.equal(await c.store.workspaceLocks.current('api'), null);
      }));

    test('cancelling a running coding job frees its workspace only once its agent tree is dead', () =>
      withCluster(db, async (c) => {
        const ws = join(c.dir, 'ws');
        mkdirSync(ws);
        await ok(c, 'workspace', 'add', 'api', '--path', ws);
        for (const key of ['long', 'next']) await ok(c, 'task', 'add', key, '--workspace', 'api');
        await ok(c, 'enqueue', 'long', '--command', 'sleep 100 & sleep 100 & wait');
        await ok(c, 'enqueue', 'next', '--command', 'true');
        c.up('a');
        await waitUntil(
          async () => {
            const pid = (await jobOf(c, 'long')).pid;
            return pid !== null && treeMembers(pid).length >= 3;
          },
          15_000,
          'the long agent to start',
        );
        const long = await jobOf(c, 'long');
        const tree = treeMembers(long.pid ?? 0);
        assert.equal((await jobOf(c, 'next')).reason, `waiting for workspace api, held by job ${long.id}`);
        await ok(c, 'cancel', String(long.id));
        await waitUntil(
          async () => (await jobOf(c, 'next')).status !== 'queued',
          15_000,
          'the next job to be placed',
        );
        assert.deepEqual(tree.filter(isAlive), [], 'every process of the cancelled tree died first');
        await waitUntil(() => done(c, ['next']), 15_000, 'the next job to finish');
        const entries = await c.store.audit.list({ jobId: long.id });
        const types = entries.map((e) => e.type);
        assert.ok(types.indexOf('job:cancelled') < types.indexOf('lock:released'));
      }));

    test('an unresolved coding job is skipped with its cause, stays queued, and runs once its workspace is configured', () =>
      withCluster(db, async (c) => {
        await ok(c, 'task', 'add', 'fix-1', '--requires-filesystem');
        await ok(c, 'enqueue', 'fix-1', '--command', 'pwd > ran.txt');
        c.up('a');
        const prefix = 'SKIPPED workspace_unresolved: task fix-1 needs an exclusive workspace lock';
        await waitUntil(
          async () => (await jobOf(c, 'fix-1')).reason?.startsWith(prefix) === true,
          15_000,
          'the job to be skipped',
        );
        const skipped = await jobOf(c, 'fix-1');
        assert.equal(skipped.status, 'queued');
        assert.equal(skipped.attempt, 0, 'never placed');
        const [entry] = await c.store.audit.list({ type: 'job:skipped' });
        assert.equal(entry?.jobId, skipped.id);
        assert.equal(entry.detail['reason'], 'workspace_unresolved');
        assert.equal(`SKIPPED workspace_unresolved: ${String(entry.detail['cause'])}`, skipped.reason);
        assert.match(String(entry.detail['fix']), /baton task set fix-1 --workspace/);
        const plan = await c.baton('plan', 'fix-1', '--json');
        assert.equal(plan.code, 2);
        assert.equal((JSON.parse(plan.stdout) as Record<string, unknown>)['error'], 'WORKSPACE_UNRESOLVED');

        const ws = join(c.dir, 'ws');
        mkdirSync(ws);
        await ok(c, 'workspace', 'add', 'api', '--path', ws);
        await ok(c, 'task', 'set', 'fix-1', '--workspace', 'api');
        await waitUntil(() => done(c, ['fix-1']), 20_000, 'the job to run once configured');
        assert.equal(readFileSync(join(ws, 'ran.txt'), 'utf8').trim(), ws);
        assert.equal((await jobOf(c, 'fix-1')).attempt, 1);
        assert.equal((await c.store.audit.list({ type: 'job:skipped' })).length, 1, 'skipped once per cause');
      }));

    test('a worktree workspace runs the job in its own checkout and retires it, keeping branch and unpushed work', () =>
      withCluster(db, async (c) => {
        const { repo } = makeRepo(c.dir);
        await ok(c, 'workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree');
        await ok(c, 'task', 'add', 'gh:acme/api#7', '--workspace', 'repo');
        const out = join(c.dir, 'out');
        const work = [
          `pwd > '${out}.where'`,
          `echo "$BATON_BRANCH" > '${out}.branch'`,
          'echo work > work.txt && git add work.txt && git commit -q -m work',
          'echo draft > draft.txt',
        ].join(' && ');
        await ok(c, 'enqueue', 'gh:acme/api#7', '--command', work);
        const up = c.up('a');
        await waitUntil(() => done(c, ['gh:acme/api#7']), 30_000, 'the job to finish');
        const where = readFileSync(`${out}.where`, 'utf8').trim();
        assert.notEqual(where, repo);
        assert.match(where, /gh-acme-api-7-f6f0d8ba-epoch-1$/);
        assert.ok(!existsSync(where), 'the worktree is removed');
        assert.equal(readFileSync(`${out}.branch`, 'utf8').trim(), 'baton/gh-acme-api-7-f6f0d8ba');
        assert.equal(
          git(repo, 'log', '-1', '--format=%s', 'baton/gh-acme-api-7-f6f0d8ba'),
          'work',
          'the branch is kept',
        );
        const archived = git(repo, 'for-each-ref', '--format=%(refname)', 'refs/baton/archive/');
        assert.notEqual(archived, '', 'the uncommitted file is archived to a ref');
        assert.equal(git(repo, 'status', '--porcelain'), '', 'the main checkout is untouched');
        const hook = join(repo, '.git', 'hooks', 'pre-push');
        assert.match(readFileSync(hook, 'utf8'), /# baton-guard:/, 'pushes from the worktree were guarded');
        assert.match(up.log(), /pushes from .* guarded by claim epoch 1/);
      }));

    test("git failing to make a job's worktree gives the job another attempt, naming git's fatal line", () =>
      withCluster(db, async (c) => {
        // In the fleet scenario a `git worktree add` lost a race with another host's git and the
        // job failed for good. Here a ref in the way fails the first attempt the same way (git
        // refuses to create the branch, which is made before the worktree: decision 0044), and is
        // gone before the second.
        const { repo } = makeRepo(c.dir);
        const key = 'gh:acme/api#9';
        git(repo, 'branch', `${branchForKey(key)}/in-the-way`);
        await ok(c, 'workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree');
        await ok(c, 'task', 'add', key, '--workspace', 'repo');
        await ok(c, 'enqueue', key, '--command', 'true');
        const up = c.up('a');
        await waitUntil(
          async () => (await jobOf(c, key)).reason?.includes('cannot lock ref') === true,
          30_000,
          'a first attempt refused by git',
        ).catch(async (e: unknown) => {
          throw new Error(String(e) + JSON.stringify(await jobOf(c, key)) + up.log());
        });
        const first = await jobOf(c, key);
        assert.equal(first.status, 'queued', `given back, not failed: ${first.reason ?? ''}`);
        assert.match(
          first.reason ?? '',
          /^requeued: worktree of workspace repo: git branch --no-track .* fatal: cannot lock ref/,
        );
        git(repo, 'branch', '-D', `${branchForKey(key)}/in-the-way`);
        await waitUntil(() => done(c, [key]), 30_000, 'the second attempt to finish');
        assert.equal((await jobOf(c, key)).attempt, 2);
        assert.match(up.log(), /fatal: cannot lock ref.*: back to the queue as queued/);
      }));

    test('coding tasks on one worktree workspace run at the same time, each in its own checkout', () =>
      withCluster(db, async (c) => {
        const { repo } = makeRepo(c.dir);
        await ok(c, 'workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree');
        const keys = ['gh:acme/api#21', 'gh:acme/api#22'];
        for (const key of keys) {
          await ok(c, 'task', 'add', key, '--workspace', 'repo');
          await ok(c, 'enqueue', key, '--command', `pwd >> '${join(c.dir, 'where.txt')}'; sleep 2`);
        }
        c.up('a', '--slots', '2');
        await waitUntil(() => done(c, keys), 30_000, 'both jobs to finish');
        const where = readFileSync(join(c.dir, 'where.txt'), 'utf8').trim().split('\n');
        assert.equal(new Set(where).size, 2, 'two checkouts');
        const spans = await Promise.all(keys.map((k) => jobOf(c, k)));
        const [a, b] = spans.map((j) => [j.startedAt ?? 0, j.finishedAt ?? 0] as const);
        assert.ok(a !== undefined && b !== undefined && a[0] < b[1] && b[0] < a[1], 'the runs overlap');
        assert.equal((await c.store.audit.list({ type: 'lock:acquired' })).length, 0, 'no workspace lock');
      }));
  });
}
