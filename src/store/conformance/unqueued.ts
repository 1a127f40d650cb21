/**
 * The open tasks nothing will work unless someone queues a job (TaskListParams.unqueued, what
 * auto-enqueue queues: store/task-list.ts) on every engine: a new task, a task sent back to
 * open by a reviewer or a resolved escalation are listed; a task with an active job, a live claim,
 * a gate, a job that failed or was cancelled since it became open, or in any state but open is not.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobFinishState } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const ALICE = { name: 'alice@box' };

const unqueued = async (store: Store, limit?: number): Promise<string[]> =>
  (await store.tasks.list({ unqueued: true, ...(limit === undefined ? {} : { limit }) })).map(
    (task) => task.key,
  );

/** Queues a job for the task, ahead of every other, and runs it to `status` in pull mode. */
async function runTo(store: Store, key: string, status: JobFinishState): Promise<void> {
  await store.jobs.enqueue({ key, priority: 0 });
  const session = await givenSession(store);
  const job = await store.jobs.claimNext({ session: session.id, start: true });
  assert.ok(job !== null && job.key === key);
  assert.ok((await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status })).ok);
  // A task sent back to open in the millisecond its job was queued keeps counting that job (SQLite
  // keeps milliseconds): a person's reject or resolve never comes that fast; a test waits for it.
  await sleep(3);
}

export function exerciseUnqueued(harness: Harness): void {
  describe('open tasks nothing will work (auto-enqueue)', () => {
    test('lists new, rejected and resolved tasks by priority; never queued, held, gated, failed or ended ones', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'new-b', 100);
        await givenTask(store, 'new-a', 100);
        await givenTask(store, 'urgent', 10);
        await store.jobs.enqueue({ key: 'queued' });
        await givenTask(store, 'claimed');
        const holder = await givenSession(store);
        assert.ok((await store.claims.acquire({ key: 'claimed', session: holder.id })).ok);
        await givenTask(store, 'gated');
        await store.lifecycle.gate({ key: 'gated', gate: 'design', by: ALICE });
        await runTo(store, 'failed', 'failed');
        const { job: cancelled } = await store.jobs.enqueue({ key: 'cancelled' });
        assert.ok((await store.jobs.cancel({ id: cancelled.id })).ok);
        await runTo(store, 'done', 'done');
        await store.tasks.add({ key: 'review', title: 'review me', reviewRequired: true });
        await runTo(store, 'review', 'done');
        await givenTask(store, 'escalated');
        await store.lifecycle.escalate({ key: 'escalated', reason: 'stuck', by: ALICE });
        assert.deepEqual(await unqueued(store), ['urgent', 'new-a', 'new-b']);
        assert.deepEqual(await unqueued(store, 2), ['urgent', 'new-a']);

        await store.lifecycle.transition({
          key: 'review',
          action: 'reject',
          by: ALICE,
          reason: 'add a test',
        });
        await store.lifecycle.transition({
          key: 'escalated',
          action: 'resolve',
          by: ALICE,
          reason: 'answered',
        });
        await store.lifecycle.approveGate({ key: 'gated', gate: 'design', by: ALICE });
        assert.deepEqual(
          await unqueued(store),
          ['escalated', 'gated', 'review', 'urgent', 'new-a', 'new-b'].sort(byPriority),
        );

        // Queued once, a task leaves the list; its job ending failed does not bring it back.
        await runTo(store, 'urgent', 'failed');
        await store.jobs.enqueue({ key: 'new-a' });
        assert.deepEqual(await unqueued(store), ['escalated', 'gated', 'new-b', 'review']);
        assert.deepEqual(
          (await store.tasks.list({ state: 'open' })).map((task) => task.key).sort(),
          [
            'cancelled',
            'claimed',
            'escalated',
            'failed',
            'gated',
            'new-a',
            'new-b',
            'queued',
            'review',
            'urgent',
          ],
          'the others are open all the same',
        );
      }));
  });
}

/** The list's order for tasks of priority 100 but one: the urgent one (10) first, then by key. */
function byPriority(left: string, right: string): number {
  const rank = (key: string): number => (key === 'urgent' ? 0 : 1);
  return rank(left) - rank(right) || left.localeCompare(right);
}
