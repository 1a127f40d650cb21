/**
 * Task dependencies (docs/decisions/0035-task-dependencies.md): a task that waits for a task not
 * done takes no job and no claim on any path a gate blocks (placement, claimNext, the worker
 * batch, `next`, a hand-off); done (and only done) lets it run; cycles are refused in the step
 * that would add them, also when two adds at once would close one together.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const ALICE = { name: 'alice@box' };
const WAIT = 60_000;

async function edges(store: Store, key: string) {
  const links = await store.lifecycle.dependencies(key);
  return {
    waitsFor: links.waitsFor.map((link) => `${link.key} (${link.state})`),
    waitedBy: links.waitedBy.map((link) => `${link.key} (${link.state})`),
  };
}

/** Runs a's job to done under a session of its own, so a ends done or in review. */
async function runToDone(store: Store, key: string): Promise<void> {
  const session = await givenSession(store);
  const job = await store.jobs.claimNext({ session: session.id, start: true });
  assert.equal(job?.key, key, `${key}'s job is the one that may run`);
  const done = await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status: 'done' });
  assert.ok(done.ok);
}

export function exerciseDependencies(harness: Harness): void {
  describe('task dependencies', () => {
    test('a task waiting for one not done is neither placed, pulled, batched, taken by next nor handed off', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const term = await givenLeader(store);
        await store.tasks.add({ key: 'a', reviewRequired: true });
        const { job: bJob } = await store.jobs.enqueue({ key: 'b', priority: 1 });
        await store.tasks.add({ key: 'c', priority: 1 });
        await store.lifecycle.depend({ key: 'b', on: 'a', by: ALICE });
        await store.lifecycle.depend({ key: 'c', on: 'a', by: ALICE });
        const blocked = { ok: false, reason: 'blocked', blocker: 'a (open)' };
        assert.deepEqual(await store.dispatch.place({ id: bJob.id, host: 'box-1', term }), blocked);
        const [candidate] = (await store.dispatch.candidates({ limit: 10 })).jobs;
        assert.equal(candidate?.blockedBy, 'a (open)', 'the pass reads the blocker with the job');
        const puller = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: puller.id }), null);
        assert.deepEqual((await store.jobs.batch({ session: puller.id, take: 5 })).taken, []);
        const next = await store.lifecycle.next({ session: puller.id });
        assert.equal(next?.task.key, 'a', 'c waits for a');
        assert.equal(await store.lifecycle.next({ session: puller.id }), null);
        await store.claims.release({
          key: 'a',
          session: puller.id,
          epoch: next.claim.epoch,
          outcome: 'released',
        });
        // Auto-enqueue queues a blocked task: its job waits in the queue saying what for.
        const unqueued = await store.tasks.list({ unqueued: true });
        assert.deepEqual(
          unqueued.map((task) => task.key),
          ['c', 'a'],
        );
        const waiter = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: waiter.id, waitMs: WAIT }), null);
        await store.tasks.add({ key: 'h' });
        await store.lifecycle.depend({ key: 'h', on: 'a', by: ALICE });
        const { job: hJob } = await store.jobs.enqueue({ key: 'h' });
        assert.deepEqual([hJob.status, hJob.session], ['queued', null], 'no hand-off of a blocked job');
        assert.equal((await store.jobs.get(bJob.id))?.status, 'queued');

        await store.sessions.end(waiter.id);
        await store.jobs.enqueue({ key: 'a' });
        await runToDone(store, 'a');
        assert.equal((await store.tasks.get('a'))?.state, 'in_review');
        assert.deepEqual(await store.dispatch.place({ id: bJob.id, host: 'box-1', term }), {
          ...blocked,
          blocker: 'a (in_review)',
        });
        await store.lifecycle.transition({ key: 'a', action: 'approve', by: ALICE });
        const placed = await store.dispatch.place({ id: bJob.id, host: 'box-1', term });
        assert.ok(placed.ok, 'a done: b is placed');
        assert.equal((await store.jobs.claimNext({ session: puller.id }))?.key, 'h');
      }));

    test('closed does not satisfy a dependency: the dependent waits, naming it, until the edge is removed', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const term = await givenLeader(store);
        await store.tasks.add({ key: 'a' });
        await store.tasks.add({ key: 'z' });
        const { job: bJob } = await store.jobs.enqueue({ key: 'b' });
        await store.lifecycle.depend({ key: 'b', on: 'a', by: ALICE });
        await store.lifecycle.depend({ key: 'b', on: 'z', by: ALICE });
        await store.lifecycle.transition({ key: 'a', action: 'close', by: ALICE });
        await store.lifecycle.transition({ key: 'z', action: 'complete', by: ALICE });
        assert.deepEqual(await store.dispatch.place({ id: bJob.id, host: 'box-1', term }), {
          ok: false,
          reason: 'blocked',
          blocker: 'a (closed)',
        });
        assert.deepEqual(await edges(store, 'b'), { waitsFor: ['a (closed)', 'z (done)'], waitedBy: [] });
        assert.deepEqual(await edges(store, 'a'), { waitsFor: [], waitedBy: ['b (open)'] });
        await store.lifecycle.undepend({ key: 'b', on: 'a', by: ALICE });
        assert.ok((await store.dispatch.place({ id: bJob.id, host: 'box-1', term })).ok);
      }));

    test('a cycle, a self-dependency and unknown keys are refused with nothing changed; changes are audited', () =>
      withFixture(harness, async ({ store }) => {
        for (const key of ['a', 'b', 'c']) await store.tasks.add({ key });
        await store.lifecycle.depend({ key: 'b', on: 'a', by: ALICE });
        const again = await store.lifecycle.depend({ key: 'b', on: 'a', by: ALICE });
        assert.deepEqual(
          again.waitsFor.map((link) => link.key),
          ['a'],
        );
        await store.lifecycle.depend({ key: 'c', on: 'b', by: ALICE });
        await assert.rejects(store.lifecycle.depend({ key: 'a', on: 'c', by: ALICE }), (error) => {
          assert.ok(error instanceof InvalidInputError);
          assert.match(error.message, /task a cannot depend on c: c already waits .* for a, a cycle/);
          return true;
        });
        await assert.rejects(store.lifecycle.depend({ key: 'a', on: 'a', by: ALICE }), InvalidInputError);
        await assert.rejects(store.lifecycle.depend({ key: 'a', on: 'nope', by: ALICE }), NotFoundError);
        await assert.rejects(store.lifecycle.depend({ key: 'nope', on: 'a', by: ALICE }), NotFoundError);
        await assert.rejects(store.lifecycle.undepend({ key: 'a', on: 'b', by: ALICE }), ConflictError);
        await assert.rejects(store.lifecycle.dependencies('nope'), NotFoundError);
        assert.deepEqual(await edges(store, 'a'), { waitsFor: [], waitedBy: ['b (open)'] });
        await store.lifecycle.undepend({ key: 'c', on: 'b', by: { name: 'bob@box' } });
        const rows = (await store.audit.list({}))
          .filter((entry) => entry.type === 'task:depended' || entry.type === 'task:undepended')
          .map((entry) => [entry.type, entry.key, entry.detail]);
        assert.deepEqual(rows, [
          ['task:depended', 'b', { on: 'a', by: 'alice@box' }],
          ['task:depended', 'c', { on: 'b', by: 'alice@box' }],
          ['task:undepended', 'c', { on: 'b', by: 'bob@box' }],
        ]);
      }));

    test('a task added after others gets its edges in the same step; a refused edge adds nothing', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.tasks.add({ key: 'a' });
        await store.tasks.add({ key: 'z' });
        const added = await store.tasks.add({
          key: 'b',
          after: ['a', 'z'],
          actor: 'alice@box',
          by: session.id,
        });
        assert.equal(added.key, 'b');
        assert.deepEqual(await edges(store, 'b'), { waitsFor: ['a (open)', 'z (open)'], waitedBy: [] });
        const rows = (await store.audit.list({ key: 'b', type: 'task:depended' })).map((entry) => [
          entry.detail,
          entry.session,
        ]);
        assert.deepEqual(rows, [
          [{ on: 'a', by: 'alice@box' }, session.id],
          [{ on: 'z', by: 'alice@box' }, session.id],
        ]);
        // The first edge would be added; the second names no task: neither the task nor the edge is.
        await assert.rejects(
          store.tasks.add({ key: 'c', after: ['a', 'nope'], actor: 'alice@box' }),
          NotFoundError,
        );
        await assert.rejects(
          store.tasks.add({ key: 'd', after: ['d'], actor: 'alice@box' }),
          InvalidInputError,
        );
        for (const key of ['c', 'd']) assert.equal(await store.tasks.get(key), null, `${key} was not added`);
        assert.deepEqual(await edges(store, 'a'), { waitsFor: [], waitedBy: ['b (open)'] });
        assert.deepEqual(
          (await store.audit.list({})).filter((entry) => entry.key === 'c' || entry.key === 'd'),
          [],
        );
      }));

    test('two adds at once that together close a cycle: one is refused, every round', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          for (let round = 0; round < 12; round++) {
            const [xx, yy, uu, vv] = ['x', 'y', 'u', 'v'].map((name) => `${name}${round}`) as [
              string,
              string,
              string,
              string,
            ];
            for (const key of [xx, yy, uu, vv]) await store.tasks.add({ key });
            await store.lifecycle.depend({ key: yy, on: uu, by: ALICE });
            await store.lifecycle.depend({ key: vv, on: xx, by: ALICE });
            // x → y → u and u → v → x: together they close x → y → u → v → x.
            const results = await Promise.allSettled([
              store.lifecycle.depend({ key: xx, on: yy, by: ALICE }),
              other.lifecycle.depend({ key: uu, on: vv, by: ALICE }),
            ]);
            const refused = results.filter((result) => result.status === 'rejected');
            assert.equal(refused.length, 1, `round ${round}: exactly one add is refused`);
            assert.ok(refused[0]?.status === 'rejected' && refused[0].reason instanceof InvalidInputError);
          }
        } finally {
          await other.close();
        }
      }));
  });
}
