/**
 * An operator's force-release (claims.forceRelease) on every engine: the live claim ends in one
 * step, whoever holds it; the holder's run is cancelled and its workspace lock goes (a running
 * one's once its runner has killed the tree); the ledger says who, why and which epoch was
 * fenced; every later write of the old holder is fenced; the next claim gets a higher epoch.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const OPERATOR = { name: 'olga@ops' };

/** A placed job on `w` (locked for the host's runner), its agent session holding the claim. */
async function givenRun(store: Store, key: string, start: boolean) {
  const { session: runner } = await givenHost(store);
  const term = await givenLeader(store);
  await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
  const { job } = await store.jobs.enqueue({ key });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
  assert.ok(placed.ok);
  const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
  if (start) assert.ok((await store.jobs.start(guard)).ok);
  const agent = await givenSession(store, 'box-1');
  const claim = await store.claims.acquire({ key, session: agent.id });
  assert.ok(claim.ok);
  return { runner: runner.id, agent: agent.id, epoch: claim.claim.epoch, guard };
}

export function exerciseForceRelease(harness: Harness): void {
  describe('force-release', () => {
    test("ends the live claim: the holder's heartbeat, release and effect are fenced; a new claim goes higher", () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'k');
        const holder = await givenSession(store, 'laptop', 'human');
        const held = await store.claims.acquire({ key: 'k', session: holder.id });
        assert.ok(held.ok);
        const result = await store.claims.forceRelease({
          key: 'k',
          reason: 'stuck for an hour',
          by: OPERATOR,
        });
        assert.ok(result.ok);
        assert.deepEqual(result.job, null);
        assert.deepEqual(
          { ...result.holder, since: 0 },
          { session: holder.id, host: 'laptop', since: 0, epoch: held.claim.epoch },
        );
        assert.equal(result.holder.since, held.claim.claimedAt);
        assert.equal(await store.claims.current('k'), null);
        const claim = { key: 'k', epoch: held.claim.epoch };
        const hb = await store.sessions.heartbeat({ session: holder.id, claim });
        assert.deepEqual(hb, { ok: false, reason: 'fenced', current: null });
        const rel = await store.claims.release({ ...claim, session: holder.id, outcome: 'done' });
        assert.equal(rel.ok, false);
        const eff = await store.effects.record({ ...claim, session: holder.id, kind: 'comment' });
        assert.equal(eff.ok, false);
        assert.deepEqual(await store.effects.list({ key: 'k' }), []);
        assert.equal((await store.tasks.get('k'))?.state, 'open', 'the task stays open');
        const other = await givenSession(store);
        const again = await store.claims.acquire({ key: 'k', session: other.id });
        assert.ok(again.ok && again.claim.epoch > held.claim.epoch);
        const late = await store.sessions.heartbeat({ session: holder.id, claim });
        assert.equal(late.ok, false);
        const [row] = await store.audit.list({ key: 'k', type: 'claim:force_released' });
        assert.ok(row !== undefined);
        assert.deepEqual(
          [row.session, row.host, row.epoch, row.detail],
          [
            holder.id,
            'laptop',
            held.claim.epoch,
            {
              by: 'olga@ops',
              bySession: null,
              reason: 'stuck for an hour',
              epoch: held.claim.epoch,
              jobId: null,
            },
          ],
        );
        const ended = (await store.claims.history('k'))[0];
        assert.equal(ended?.outcome, 'released');
      }));

    test('cancels the running job with the reason; its workspace lock stays until its runner releases it', () =>
      withFixture(harness, async ({ store }) => {
        const run = await givenRun(store, 'k', true);
        const by = { name: 'olga@ops', session: (await givenSession(store, 'desk', 'human')).id };
        const result = await store.claims.forceRelease({ key: 'k', reason: 'runaway', by });
        assert.ok(result.ok);
        assert.deepEqual(result.job, { id: run.guard.id, was: 'running' });
        const job = await store.jobs.get(run.guard.id);
        assert.equal(job?.status, 'cancelled');
        assert.equal(job?.reason, 'force-released by olga@ops: runaway');
        const finished = await store.jobs.finish({ ...run.guard, status: 'done' });
        assert.equal(finished.ok, false, "the runner's own finish is lost");
        assert.notEqual(await store.workspaceLocks.current('w'), null, 'the agent may still be at work');
        await store.workspaceLocks.releaseJob({ jobId: run.guard.id, session: run.runner });
        assert.equal(await store.workspaceLocks.current('w'), null);
        const types = (await store.audit.list({ key: 'k' })).map((entry) => entry.type);
        const index = types.indexOf('claim:force_released');
        assert.deepEqual(types.slice(index, index + 2), ['claim:force_released', 'job:cancelled']);
        const [row] = await store.audit.list({ key: 'k', type: 'claim:force_released' });
        assert.equal(row?.detail['jobId'], run.guard.id);
        assert.equal(row?.detail['bySession'], by.session);
        const hb = await store.sessions.heartbeat({
          session: run.agent,
          claim: { key: 'k', epoch: run.epoch },
        });
        assert.equal(hb.ok, false);
      }));

    test('releases the workspace lock of a run that had not started, in the same step', () =>
      withFixture(harness, async ({ store }) => {
        const run = await givenRun(store, 'k', false);
        const result = await store.claims.forceRelease({ key: 'k', reason: 'wrong branch', by: OPERATOR });
        assert.ok(result.ok);
        assert.deepEqual(result.job, { id: run.guard.id, was: 'claimed' });
        assert.equal(await store.workspaceLocks.current('w'), null);
        const locks = (await store.audit.list({ jobId: run.guard.id })).filter(
          (entry) => entry.type === 'lock:released',
        );
        assert.equal(locks.length, 1);
      }));

    test('a task with no live claim answers no_claim and changes nothing; an unknown task is not found', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'free');
        const { job } = await store.jobs.enqueue({ key: 'free' });
        const before = await store.audit.list({ limit: 1000 });
        const result = await store.claims.forceRelease({ key: 'free', reason: 'why not', by: OPERATOR });
        assert.deepEqual(result, { ok: false, reason: 'no_claim' });
        assert.equal((await store.jobs.get(job.id))?.status, 'queued', 'a queued job is no claim');
        assert.deepEqual(await store.audit.list({ limit: 1000 }), before);
        await assert.rejects(
          store.claims.forceRelease({ key: 'nope', reason: 'x', by: OPERATOR }),
          (error: unknown) => error instanceof NotFoundError,
        );
        assert.deepEqual(await store.audit.list({ limit: 1000 }), before);
      }));
  });
}
