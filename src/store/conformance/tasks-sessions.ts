import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';
import type { TaskListParams } from '../store.js';

export function exerciseTasksAndSessions(harness: Harness): void {
  describe('tasks', () => {
    test('adds a task and reads back every field', () =>
      withFixture(harness, async ({ store }) => {
        const before = await store.now();
        const task = await store.tasks.add({
          key: 'github:acme/api#1246',
          title: 'Fix the login race',
          priority: 5,
          project: 'api',
          assignee: 'alice',
          labels: ['bug', 'auth'],
        });
        assert.equal(task.key, 'github:acme/api#1246');
        assert.equal(task.title, 'Fix the login race');
        assert.equal(task.priority, 5);
        assert.equal(task.project, 'api');
        assert.equal(task.assignee, 'alice');
        assert.deepEqual([...task.labels], ['bug', 'auth']);
        assert.equal(task.epoch, 0);
        assert.equal(task.holder, null);
        assert.ok(task.createdAt >= before - 1000 && task.createdAt <= (await store.now()) + 1000);
        assert.deepEqual(await store.tasks.get(task.key), task);
      }));

    test('refuses a second task with the same key and keeps the first', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'k1', 7);
        await assert.rejects(store.tasks.add({ key: 'k1', priority: 1 }), ConflictError);
        assert.equal((await store.tasks.get('k1'))?.priority, 7);
        assert.equal((await store.audit.list({ key: 'k1' })).length, 1);
      }));

    test('lists the keys beyond ASCII, oldest first, as stored: composed and decomposed alike (decision 0054)', () =>
      withFixture(harness, async ({ store }) => {
        // The store keeps a key as given: only the coordinator's validateKey composes it.
        const keys = ['plain-1', 'caf\u00e9', 'cafe\u0301', '\u212a-kelvin', '🚀-launch', 'plain-2'];
        for (const key of keys) await store.tasks.add({ key });
        assert.deepEqual(await store.tasks.keysBeyondAscii(100), keys.slice(1, 5), 'oldest first');
        assert.equal((await store.tasks.get('cafe\u0301'))?.key, 'cafe\u0301', 'kept decomposed');
        assert.deepEqual(await store.tasks.keysBeyondAscii(2), keys.slice(1, 3));
      }));

    test('returns null for an unknown key', () =>
      withFixture(harness, async ({ store }) => {
        assert.equal(await store.tasks.get('nope'), null);
      }));

    test('lists tasks by priority then key, filtered by project and assignee', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: 'b', priority: 2, project: 'p1' });
        await store.tasks.add({ key: 'a', priority: 2, project: 'p2', assignee: 'bob' });
        await store.tasks.add({ key: 'c', priority: 1, project: 'p1' });
        assert.deepEqual(
          (await store.tasks.list()).map((task) => task.key),
          ['c', 'a', 'b'],
        );
        assert.deepEqual(
          (await store.tasks.list({ project: 'p1' })).map((task) => task.key),
          ['c', 'b'],
        );
        assert.deepEqual(
          (await store.tasks.list({ assignee: 'bob' })).map((task) => task.key),
          ['a'],
        );
      }));

    test('lists the tasks with a label, whatever their state, and none for a label no task has', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: 'a', labels: ['ui', 'bug'] });
        await store.tasks.add({ key: 'b', labels: ['bug'] });
        await store.tasks.add({ key: 'c', labels: ['ui-kit'] });
        await store.tasks.add({ key: 'd' });
        await store.lifecycle.transition({ key: 'a', action: 'close', by: { name: 'alice' } });
        const keys = async (label: string) => (await store.tasks.list({ label })).map((task) => task.key);
        assert.deepEqual(await keys('bug'), ['a', 'b']);
        assert.deepEqual(await keys('ui'), ['a'], 'closed tasks count; a label is matched whole');
        assert.deepEqual(await keys('u'), []);
        assert.deepEqual(
          (await store.tasks.list({ label: 'bug', state: 'open' })).map((task) => task.key),
          ['b'],
        );
      }));

    test('lists the tasks behind a gate, or those without one, with the other filters', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: 'a', labels: ['ui'] });
        await store.tasks.add({ key: 'b', labels: ['ui'] });
        await store.tasks.add({ key: 'c' });
        await store.tasks.add({ key: 'd' });
        await store.tasks.add({ key: 'e' });
        for (const key of ['a', 'c', 'd', 'e'])
          await store.lifecycle.gate({ key, gate: 'design', by: { name: 'alice' } });
        await store.lifecycle.approveGate({ key: 'd', gate: 'design', by: { name: 'alice' } });
        await store.lifecycle.transition({ key: 'e', action: 'close', by: { name: 'alice' } });
        const keys = async (params: TaskListParams) =>
          (await store.tasks.list(params)).map((task) => task.key);
        assert.deepEqual(await keys({ gated: true }), ['a', 'c']);
        assert.deepEqual(
          await keys({ gated: false }),
          ['b', 'd', 'e'],
          'an opened gate, a closed task: none waits',
        );
        assert.deepEqual(await keys({ gated: true, label: 'ui' }), ['a']);
        assert.deepEqual(await keys({}), ['a', 'b', 'c', 'd', 'e']);
      }));

    test('pages the list after a key, by priority then key, each task once, with the filters', () =>
      withFixture(harness, async ({ store }) => {
        // Priorities out of key order, ties broken by key, and done tasks among them (decision 0045).
        for (const [key, priority] of [
          ['e', 1],
          ['a', 3],
          ['d', 1],
          ['b', 2],
          ['c', 3],
          ['f', 2],
        ] as const)
          await store.tasks.add({ key, priority });
        for (const key of ['d', 'a', 'f']) {
          await store.lifecycle.transition({ key, action: 'close', by: { name: 'alice' } });
        }
        const keys = async (params: TaskListParams) =>
          (await store.tasks.list(params)).map((task) => task.key);
        assert.deepEqual(await keys({}), ['d', 'e', 'b', 'f', 'a', 'c']);
        const pages: string[][] = [];
        let after: string | undefined;
        // At most 5 pages: a cursor that does not move on would loop for ever.
        for (let page = await keys({ limit: 2 }); page.length > 0 && pages.length < 5;) {
          pages.push(page);
          after = page.at(-1);
          page = await keys({ limit: 2, after });
        }
        assert.deepEqual(pages, [
          ['d', 'e'],
          ['b', 'f'],
          ['a', 'c'],
        ]);
        assert.deepEqual(
          await keys({ after: 'e' }),
          ['b', 'f', 'a', 'c'],
          'a tie of priority goes on by key',
        );
        assert.deepEqual(await keys({ state: 'closed', after: 'd' }), ['f', 'a']);
        assert.deepEqual(await keys({ state: 'open', after: 'b', limit: 1 }), ['c']);
        assert.deepEqual(await keys({ after: 'c' }), [], 'none after the last');
        assert.deepEqual(await keys({ after: 'nope' }), [], 'none after a key no task has');
      }));
  });

  describe('sessions', () => {
    test('starts a live session with kind, host, pid and a first heartbeat', () =>
      withFixture(harness, async ({ store }) => {
        const session = await store.sessions.start({
          kind: 'human',
          host: 'laptop',
          pid: 99,
          name: 'vs code',
        });
        assert.equal(session.kind, 'human');
        assert.equal(session.host, 'laptop');
        assert.equal(session.pid, 99);
        assert.equal(session.name, 'vs code');
        assert.equal(session.state, 'live');
        assert.equal(session.endedAt, null);
        assert.equal(session.heartbeatAt, session.startedAt);
        assert.deepEqual(await store.sessions.get(session.id), session);
      }));

    test('gives every session a distinct id', () =>
      withFixture(harness, async ({ store }) => {
        const ids = await Promise.all(Array.from({ length: 10 }, () => givenSession(store)));
        assert.equal(new Set(ids.map((session) => session.id)).size, 10);
      }));

    test('advances the heartbeat on the database clock', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.deepEqual(await store.sessions.heartbeat({ session: session.id }), { ok: true });
        const after = await store.sessions.get(session.id);
        assert.ok(after !== null && after.heartbeatAt > session.heartbeatAt);
      }));

    test('reports a heartbeat of an unknown session as not found', () =>
      withFixture(harness, async ({ store }) => {
        await assert.rejects(store.sessions.heartbeat({ session: 424242 }), NotFoundError);
      }));

    test('ends a session, keeps its row and releases its claims as abandoned', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await givenTask(store, 't1');
        await store.claims.acquire({ key: 't1', session: session.id });
        assert.deepEqual(await store.sessions.end(session.id), { ended: true, jobsRequeued: [] });
        const ended = await store.sessions.get(session.id);
        assert.equal(ended?.state, 'ended');
        assert.ok(ended?.endedAt !== null);
        assert.equal(await store.claims.current('t1'), null);
        assert.equal((await store.claims.history('t1'))[0]?.outcome, 'abandoned');
        assert.equal((await store.tasks.get('t1'))?.holder, null);
      }));

    test('ending an ended session answers ended false, no jobs, and appends nothing', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.sessions.end(session.id);
        const entries = (await store.audit.list()).length;
        assert.deepEqual(await store.sessions.end(session.id), { ended: false, jobsRequeued: [] });
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('fences the heartbeat of an ended session, saying so and naming who holds its task now', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const other = await givenSession(store);
        await givenTask(store, 'k');
        assert.ok((await store.claims.acquire({ key: 'k', session: session.id })).ok);
        await store.sessions.end(session.id);
        const ended = { ok: false, reason: 'fenced', current: null, sessionEnded: true };
        assert.deepEqual(await store.sessions.heartbeat({ session: session.id }), ended);
        const free = await store.sessions.heartbeat({ session: session.id, claim: { key: 'k', epoch: 1 } });
        assert.deepEqual(free, ended, 'no one holds k');
        const taken = await store.claims.acquire({ key: 'k', session: other.id });
        assert.ok(taken.ok);
        const held = await store.sessions.heartbeat({ session: session.id, claim: { key: 'k', epoch: 1 } });
        assert.deepEqual(held, {
          ...ended,
          current: { session: other.id, host: other.host, since: taken.claim.claimedAt, epoch: 2 },
        });
      }));

    test('answers each of many concurrent heartbeats alone: renewed, fenced, ended or unknown', () =>
      withFixture(harness, async ({ store }) => {
        const count = 60;
        const sessions = await Promise.all(Array.from({ length: count }, () => givenSession(store)));
        for (let index = 0; index < count; index++) await givenTask(store, `t-${index}`);
        const claims = await Promise.all(
          sessions.map((session, index) => store.claims.acquire({ key: `t-${index}`, session: session.id })),
        );
        assert.ok(claims.every((result) => result.ok));
        // Session 0 ends; session 1's claim moves to session 2 (released, then claimed again).
        await store.sessions.end(sessions[0]!.id);
        await store.claims.release({ key: 't-1', session: sessions[1]!.id, epoch: 1, outcome: 'released' });
        const taker = await store.claims.acquire({ key: 't-1', session: sessions[2]!.id });
        assert.ok(taker.ok);
        const before = await store.sessions.get(sessions[5]!.id);
        const beats = await Promise.allSettled([
          ...sessions.map((session, index) =>
            store.sessions.heartbeat({ session: session.id, claim: { key: `t-${index}`, epoch: 1 } }),
          ),
          store.sessions.heartbeat({ session: sessions[3]!.id, claim: { key: 'no-such-task', epoch: 1 } }),
          store.sessions.heartbeat({ session: 424242 }),
          store.sessions.heartbeat({ session: sessions[4]!.id }),
        ]);
        const value = (index: number) => {
          const beat = beats[index];
          assert.ok(beat?.status === 'fulfilled', `beat ${index} answered`);
          return beat.value;
        };
        const ended = { ok: false, reason: 'fenced', current: null, sessionEnded: true };
        assert.deepEqual(value(0), ended, 'an ended session');
        const moved = value(1);
        assert.equal(moved.ok, false, 'a claim that moved is fenced');
        assert.ok(!moved.ok && moved.sessionEnded === undefined, 'its session is live');
        assert.equal(!moved.ok && moved.current?.session, sessions[2]!.id, 'naming who holds it now');
        for (let index = 3; index < count; index++)
          assert.deepEqual(value(index), { ok: true }, `beat ${index} renewed`);
        const unknownTask = beats[count];
        assert.ok(unknownTask?.status === 'rejected' && unknownTask.reason instanceof NotFoundError);
        const unknownSession = beats[count + 1];
        assert.ok(unknownSession?.status === 'rejected' && unknownSession.reason instanceof NotFoundError);
        assert.deepEqual(value(count + 2), { ok: true });
        const after = await store.sessions.get(sessions[5]!.id);
        assert.ok(after !== null && before !== null && after.heartbeatAt >= before.heartbeatAt);
        const claim = (await store.claims.history('t-5'))[0];
        assert.ok(claim !== undefined && claim.heartbeatAt >= claim.claimedAt);
      }));

    test('lists live sessions only when asked', () =>
      withFixture(harness, async ({ store }) => {
        const first = await givenSession(store);
        const second = await givenSession(store);
        await store.sessions.end(first.id);
        assert.deepEqual(
          (await store.sessions.list()).map((session) => session.id),
          [first.id, second.id],
        );
        assert.deepEqual(
          (await store.sessions.list({ liveOnly: true })).map((session) => session.id),
          [second.id],
        );
      }));
  });
}
