/** `next`: the next eligible task, claimed in one step, never the same one for two callers. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError } from '../../core/errors.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const ALICE = { name: 'alice@box' };

export function exerciseNext(harness: Harness): void {
  describe('next', () => {
    test('skips done, closed, escalated, gated, held and queued tasks, and takes the rest by priority, then age', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const other = await givenSession(store);
        for (const [key, priority] of [
          ['done', 1],
          ['closed', 1],
          ['escalated', 1],
          ['gated', 1],
          ['held', 1],
          ['queued', 1],
          ['late', 50],
          ['early', 50],
          ['urgent', 10],
        ] as const) {
          await store.tasks.add({ key, title: `the ${key} one`, priority });
        }
        await store.lifecycle.transition({ key: 'done', action: 'complete', by: ALICE });
        await store.lifecycle.transition({ key: 'closed', action: 'close', by: ALICE });
        await store.lifecycle.escalate({ key: 'escalated', reason: 'why', by: ALICE });
        await store.lifecycle.gate({ key: 'gated', gate: 'design', by: ALICE });
        await store.claims.acquire({ key: 'held', session: other.id });
        await store.jobs.enqueue({ key: 'queued' });
        const got: string[] = [];
        for (;;) {
          const next = await store.lifecycle.next({ session: session.id });
          if (next === null) break;
          assert.equal(next.claim.session, session.id);
          assert.equal(next.claim.epoch, next.task.epoch);
          assert.equal(next.task.holder?.session, session.id);
          got.push(next.task.key);
        }
        assert.deepEqual(got, ['urgent', 'late', 'early']);
        const granted = await store.audit.list({ key: 'urgent', type: 'claim:granted' });
        assert.deepEqual(granted[0]?.detail, { via: 'next' });
      }));

    test('filters by project and label, and refuses a session that is not live', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.tasks.add({ key: 'a', project: 'api', labels: ['bug'] });
        await store.tasks.add({ key: 'b', project: 'web', labels: ['bug', 'ui'] });
        await store.tasks.add({ key: 'c', project: 'web' });
        assert.equal((await store.lifecycle.next({ session: session.id, label: 'ui' }))?.task.key, 'b');
        assert.equal((await store.lifecycle.next({ session: session.id, project: 'web' }))?.task.key, 'c');
        assert.equal(await store.lifecycle.next({ session: session.id, project: 'web' }), null);
        assert.equal((await store.lifecycle.next({ session: session.id, label: 'bug' }))?.task.key, 'a');
        await store.sessions.end(session.id);
        await assert.rejects(store.lifecycle.next({ session: session.id }), FencedError);
      }));

    test('takes over a task whose holder passed its TTL', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await store.tasks.add({ key: 'k' });
        const gone = await store.sessions.start({ kind: 'human', host: 'h', pid: 1, ttlMs: 60_000 });
        await store.claims.acquire({ key: 'k', session: gone.id });
        const me = await store.sessions.start({ kind: 'human', host: 'h', pid: 2, ttlMs: 3_600_000 });
        assert.equal(await store.lifecycle.next({ session: me.id }), null);
        await moveClock(61_000);
        const next = await store.lifecycle.next({ session: me.id });
        assert.equal(next?.claim.epoch, 2);
        assert.deepEqual(
          (await store.claims.history('k')).map((claim) => claim.outcome),
          ['expired', null],
        );
      }));

    test('never gives two concurrent callers the same task', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        for (let index = 0; index < 12; index++) await store.tasks.add({ key: `t${index}` });
        const first = await givenSession(store);
        const second = await givenSession(store);
        const got = await Promise.all(
          Array.from({ length: 16 }, (_, index) =>
            index % 2 === 0
              ? store.lifecycle.next({ session: first.id })
              : other.lifecycle.next({ session: second.id }),
          ),
        );
        const keys = got.flatMap((result) => (result === null ? [] : [result.task.key]));
        assert.equal(keys.length, 12);
        assert.equal(new Set(keys).size, 12);
        await other.close();
      }));
  });
}
