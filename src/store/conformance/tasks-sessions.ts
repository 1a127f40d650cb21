import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseTasksAndSessions(h: Harness): void {
  describe('tasks', () => {
    test('adds a task and reads back every field', () =>
      withFixture(h, async ({ store }) => {
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
      withFixture(h, async ({ store }) => {
        await givenTask(store, 'k1', 7);
        await assert.rejects(store.tasks.add({ key: 'k1', priority: 1 }), ConflictError);
        assert.equal((await store.tasks.get('k1'))?.priority, 7);
        assert.equal((await store.audit.list({ key: 'k1' })).length, 1);
      }));

    test('returns null for an unknown key', () =>
      withFixture(h, async ({ store }) => {
        assert.equal(await store.tasks.get('nope'), null);
      }));

    test('lists tasks by priority then key, filtered by project and assignee', () =>
      withFixture(h, async ({ store }) => {
        await store.tasks.add({ key: 'b', priority: 2, project: 'p1' });
        await store.tasks.add({ key: 'a', priority: 2, project: 'p2', assignee: 'bob' });
        await store.tasks.add({ key: 'c', priority: 1, project: 'p1' });
        assert.deepEqual(
          (await store.tasks.list()).map((t) => t.key),
          ['c', 'a', 'b'],
        );
        assert.deepEqual(
          (await store.tasks.list({ project: 'p1' })).map((t) => t.key),
          ['c', 'b'],
        );
        assert.deepEqual(
          (await store.tasks.list({ assignee: 'bob' })).map((t) => t.key),
          ['a'],
        );
      }));
  });

  describe('sessions', () => {
    test('starts a live session with kind, host, pid and a first heartbeat', () =>
      withFixture(h, async ({ store }) => {
        const s = await store.sessions.start({ kind: 'human', host: 'laptop', pid: 99, name: 'vs code' });
        assert.equal(s.kind, 'human');
        assert.equal(s.host, 'laptop');
        assert.equal(s.pid, 99);
        assert.equal(s.name, 'vs code');
        assert.equal(s.state, 'live');
        assert.equal(s.endedAt, null);
        assert.equal(s.heartbeatAt, s.startedAt);
        assert.deepEqual(await store.sessions.get(s.id), s);
      }));

    test('gives every session a distinct id', () =>
      withFixture(h, async ({ store }) => {
        const ids = await Promise.all(Array.from({ length: 10 }, () => givenSession(store)));
        assert.equal(new Set(ids.map((s) => s.id)).size, 10);
      }));

    test('advances the heartbeat on the database clock', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await new Promise((r) => setTimeout(r, 20));
        assert.deepEqual(await store.sessions.heartbeat({ session: s.id }), { ok: true });
        const after = await store.sessions.get(s.id);
        assert.ok(after !== null && after.heartbeatAt > s.heartbeatAt);
      }));

    test('reports a heartbeat of an unknown session as not found', () =>
      withFixture(h, async ({ store }) => {
        await assert.rejects(store.sessions.heartbeat({ session: 424242 }), NotFoundError);
      }));

    test('ends a session, keeps its row and releases its claims as abandoned', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await givenTask(store, 't1');
        await store.claims.acquire({ key: 't1', session: s.id });
        assert.equal(await store.sessions.end(s.id), true);
        const ended = await store.sessions.get(s.id);
        assert.equal(ended?.state, 'ended');
        assert.ok(ended?.endedAt !== null);
        assert.equal(await store.claims.current('t1'), null);
        assert.equal((await store.claims.history('t1'))[0]?.outcome, 'abandoned');
        assert.equal((await store.tasks.get('t1'))?.holder, null);
      }));

    test('ending an ended session returns false and appends nothing', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await store.sessions.end(s.id);
        const entries = (await store.audit.list()).length;
        assert.equal(await store.sessions.end(s.id), false);
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('fences the heartbeat of an ended session', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await store.sessions.end(s.id);
        const result = await store.sessions.heartbeat({ session: s.id });
        assert.equal(result.ok, false);
      }));

    test('answers each of many concurrent heartbeats alone: renewed, fenced, ended or unknown', () =>
      withFixture(h, async ({ store }) => {
        const n = 60;
        const sessions = await Promise.all(Array.from({ length: n }, () => givenSession(store)));
        for (let i = 0; i < n; i++) await givenTask(store, `t-${i}`);
        const claims = await Promise.all(
          sessions.map((s, i) => store.claims.acquire({ key: `t-${i}`, session: s.id })),
        );
        assert.ok(claims.every((c) => c.ok));
        // Session 0 ends; session 1's claim moves to session 2 (released, then claimed again).
        await store.sessions.end(sessions[0]!.id);
        await store.claims.release({ key: 't-1', session: sessions[1]!.id, epoch: 1, outcome: 'released' });
        const taker = await store.claims.acquire({ key: 't-1', session: sessions[2]!.id });
        assert.ok(taker.ok);
        const before = await store.sessions.get(sessions[5]!.id);
        const beats = await Promise.allSettled([
          ...sessions.map((s, i) =>
            store.sessions.heartbeat({ session: s.id, claim: { key: `t-${i}`, epoch: 1 } }),
          ),
          store.sessions.heartbeat({ session: sessions[3]!.id, claim: { key: 'no-such-task', epoch: 1 } }),
          store.sessions.heartbeat({ session: 424242 }),
          store.sessions.heartbeat({ session: sessions[4]!.id }),
        ]);
        const value = (i: number) => {
          const b = beats[i];
          assert.ok(b?.status === 'fulfilled', `beat ${i} answered`);
          return b.value;
        };
        assert.deepEqual(value(0), { ok: false, reason: 'fenced', current: null }, 'an ended session');
        const moved = value(1);
        assert.equal(moved.ok, false, 'a claim that moved is fenced');
        assert.equal(!moved.ok && moved.current?.session, sessions[2]!.id, 'naming who holds it now');
        for (let i = 3; i < n; i++) assert.deepEqual(value(i), { ok: true }, `beat ${i} renewed`);
        const unknownTask = beats[n];
        assert.ok(unknownTask?.status === 'rejected' && unknownTask.reason instanceof NotFoundError);
        const unknownSession = beats[n + 1];
        assert.ok(unknownSession?.status === 'rejected' && unknownSession.reason instanceof NotFoundError);
        assert.deepEqual(value(n + 2), { ok: true });
        const after = await store.sessions.get(sessions[5]!.id);
        assert.ok(after !== null && before !== null && after.heartbeatAt >= before.heartbeatAt);
        const claim = (await store.claims.history('t-5'))[0];
        assert.ok(claim !== undefined && claim.heartbeatAt >= claim.claimedAt);
      }));

    test('lists live sessions only when asked', () =>
      withFixture(h, async ({ store }) => {
        const a = await givenSession(store);
        const b = await givenSession(store);
        await store.sessions.end(a.id);
        assert.deepEqual(
          (await store.sessions.list()).map((s) => s.id),
          [a.id, b.id],
        );
        assert.deepEqual(
          (await store.sessions.list({ liveOnly: true })).map((s) => s.id),
          [b.id],
        );
      }));
  });
}
