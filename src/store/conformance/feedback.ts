/**
 * A task's feedback for its next run (core/task.ts, Task.feedback; BATON_FEEDBACK and
 * BATON_FEEDBACK_FROM) on every engine: the latest human answer, a rejection's reason in review or
 * the note an escalation was resolved with, and which of the two it is
 * (docs/decisions/0062-a-resolve-note-reaches-the-next-run.md).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const ALICE = { name: 'alice@box' };

const feedbackOf = async (store: Store, key: string) => {
  const task = await store.tasks.get(key);
  return { feedback: task?.feedback, from: task?.feedbackFrom };
};

async function escalateAndResolve(store: Store, key: string, note?: string): Promise<void> {
  const escalated = await store.lifecycle.escalate({ key, reason: 'which database?', by: { name: 'agent' } });
  assert.ok(escalated.ok);
  await store.lifecycle.transition({
    key,
    action: 'resolve',
    by: ALICE,
    ...(note === undefined ? {} : { reason: note }),
  });
}

export function exerciseFeedback(harness: Harness): void {
  describe('feedback for the next run', () => {
    test('a resolve note is the next run feedback, from escalation; a rejection replaces it, from review', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'f');
        assert.deepEqual(await feedbackOf(store, 'f'), { feedback: null, from: null });
        await escalateAndResolve(store, 'f', 'use the staging database');
        assert.deepEqual(await feedbackOf(store, 'f'), {
          feedback: 'use the staging database',
          from: 'escalation',
        });
        await escalateAndResolve(store, 'f');
        assert.deepEqual(
          await feedbackOf(store, 'f'),
          { feedback: 'use the staging database', from: 'escalation' },
          'a resolve without a note keeps the last answer',
        );
        await store.tasks.add({ key: 'r', title: 'review me', reviewRequired: true });
        await escalateAndResolve(store, 'r', 'yes, drop the column');
        const held = await store.claims.acquire({ key: 'r', session: (await givenSession(store)).id });
        assert.ok(held.ok);
        await store.claims.release({
          key: 'r',
          session: held.claim.session,
          epoch: held.claim.epoch,
          outcome: 'done',
        });
        assert.equal((await store.tasks.get('r'))?.state, 'in_review');
        await store.lifecycle.transition({ key: 'r', action: 'reject', by: ALICE, reason: 'add a test' });
        assert.deepEqual(await feedbackOf(store, 'r'), { feedback: 'add a test', from: 'review' });
        await escalateAndResolve(store, 'r', 'the test may use the fixture');
        assert.deepEqual(await feedbackOf(store, 'r'), {
          feedback: 'the test may use the fixture',
          from: 'escalation',
        });
        await store.lifecycle.transition({ key: 'f', action: 'complete', by: ALICE });
        assert.deepEqual(await feedbackOf(store, 'f'), { feedback: null, from: null }, 'done clears it');
      }));
  });
}
