/**
 * The run path of the workspace model (run-workspace.ts) against real stores on both engines:
 * what the runner does after Step 0 when the plan it resolves is none, exclusive on a workspace
 * it holds, exclusive on one another job holds, or unresolved (WORKSPACE_UNRESOLVED).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import { placedOnBox1 } from '../../test/support/placed-job.js';
import { settleWorkspace } from './run-workspace.js';

const POLICY = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };

/** A host `box-1` with its runner, a leader, and job `k` placed on it (with `workspace`), started, claimed. */
async function givenRun(store: Store, workspace?: string) {
  const { runner, job, term } = await placedOnBox1(store, 'k', workspace);
  const placed = { job };
  const guard = { id: job.id, session: runner.id, epoch: job.epoch };
  await store.jobs.start(guard);
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 2 });
  const claim = await store.claims.acquire({ key: 'k', session: agent.id });
  assert.ok(claim.ok);
  const lines: string[] = [];
  const cwd = mkdtempSync(join(tmpdir(), 'baton-run-'));
  const options = {
    store,
    host: 'box-1',
    runnerSession: runner.id,
    cwd,
    worktreeDir: join(cwd, 'worktrees'),
    dbUrl: join(cwd, 'baton.db'), // read by a worktree run's push guard only; none here
    policy: POLICY,
    log: (line: string) => lines.push(line),
  };
  const release = (outcome: 'failed' | 'released') =>
    store.claims.release({ key: 'k', session: agent.id, epoch: claim.claim.epoch, outcome });
  const claimRef = { session: agent.id, key: 'k', epoch: claim.claim.epoch };
  const settle = () => settleWorkspace(options, placed.job, guard, claimRef, release);
  return { runner, job: placed.job, cwd, lines, settle, term };
}

async function withStore(db: ReturnType<typeof bothEngines>[number], body: (store: Store) => Promise<void>) {
  const store = await openStore(await db.fresh());
  try {
    await body(store);
  } finally {
    await store.close();
  }
}

for (const db of bothEngines()) {
  describe(`${db.name}: the run's workspace`, () => {
    test('runs a cognitive job in the runner directory without touching a lock', () =>
      withStore(db, async (store) => {
        const run = await givenRun(store);
        const dir = await run.settle();
        assert.equal(dir?.path, run.cwd);
        const types = (await store.audit.list({ jobId: run.job.id })).map((e) => e.type);
        assert.ok(!types.some((t) => t.startsWith('lock:')));
      }));

    test('runs an exclusive job in the workspace whose lock the placement took, taking nothing more', () =>
      withStore(db, async (store) => {
        const path = mkdtempSync(join(tmpdir(), 'baton-ws-'));
        await store.workspaces.add({ name: 'api', path, kind: 'dir' });
        await store.tasks.add({ key: 'k' });
        await store.workspaceTasks.setRequirements({ key: 'k', requiresFilesystem: true, workspace: 'api' });
        const run = await givenRun(store, 'api');
        const dir = await run.settle();
        assert.equal(dir?.path, path);
        assert.deepEqual(dir.env, { BATON_WORKSPACE: 'api' });
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
        assert.equal((await store.workspaceLocks.current('api'))?.jobId, run.job.id);
      }));

    test('fails the job with WORKSPACE_UNRESOLVED, its cause and its fix, when no workspace can be resolved', () =>
      withStore(db, async (store) => {
        await store.tasks.add({ key: 'k' });
        const run = await givenRun(store);
        await store.workspaceTasks.setRequirements({ key: 'k', requiresFilesystem: true, workspace: null });
        assert.equal(await run.settle(), null);
        const job = await store.jobs.get(run.job.id);
        assert.equal(job?.status, 'failed');
        assert.match(
          job.reason ?? '',
          /^WORKSPACE_UNRESOLVED: task k needs an exclusive workspace lock .*; fix: bind a workspace to the task/,
        );
        assert.equal(await store.claims.current('k'), null);
        assert.equal((await store.claims.history('k'))[0]?.outcome, 'failed');
      }));

    test('gives the job back, saying who holds the workspace, when its task became coding after placement', () =>
      withStore(db, async (store) => {
        const path = mkdtempSync(join(tmpdir(), 'baton-ws-'));
        await store.workspaces.add({ name: 'api', path, kind: 'dir' });
        await store.tasks.add({ key: 'k' });
        const run = await givenRun(store);
        const { job: other } = await store.jobs.enqueue({ key: 'other' });
        const held = await store.dispatch.place({
          id: other.id,
          host: 'box-1',
          term: run.term,
          workspace: 'api',
        });
        assert.ok(held.ok);
        await store.workspaceTasks.setRequirements({ key: 'k', requiresFilesystem: true, workspace: 'api' });
        assert.equal(await run.settle(), null);
        const job = await store.jobs.get(run.job.id);
        assert.equal(job?.status, 'queued');
        assert.equal(job.reason, `requeued: waiting for workspace api, held by job ${other.id}`);
        assert.equal(await store.claims.current('k'), null);
        assert.equal((await store.workspaceLocks.current('api'))?.jobId, other.id);
      }));

    test('fails the job, releasing the lock, when the workspace is not a directory on this host', () =>
      withStore(db, async (store) => {
        await store.workspaces.add({ name: 'api', path: '/nonexistent/baton/api', kind: 'dir' });
        await store.tasks.add({ key: 'k' });
        await store.workspaceTasks.setRequirements({ key: 'k', requiresFilesystem: true, workspace: 'api' });
        const run = await givenRun(store, 'api');
        assert.equal(await run.settle(), null);
        const job = await store.jobs.get(run.job.id);
        assert.equal(job?.status, 'failed');
        assert.match(
          job.reason ?? '',
          /^workspace api: \/nonexistent\/baton\/api is not a directory on host box-1/,
        );
        assert.equal(await store.workspaceLocks.current('api'), null);
      }));
  });
}
