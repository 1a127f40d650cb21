/**
 * The backlog's page (observe.tasksPage): tasks newest first by keyset, filtered by state,
 * project, label and "blocked", each with the keys it still waits for and its active job.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const by = { name: 'alice@box' };

/** Seven tasks, added in this order: the page shows them newest first. */
async function givenBacklog(store: Store): Promise<void> {
  await store.tasks.add({ key: 'a', labels: ['ui'], project: 'web' });
  await store.tasks.add({ key: 'done-z' });
  await store.tasks.add({ key: 'closed-y' });
  await store.tasks.add({ key: 'b', labels: ['api'] });
  await store.tasks.add({ key: 'c', project: 'web' });
  await store.jobs.enqueue({ key: 'queued-d' });
  await store.tasks.add({ key: 'esc-e' });
  for (const on of ['a', 'done-z', 'closed-y']) await store.lifecycle.depend({ key: 'b', on, by });
  await store.lifecycle.depend({ key: 'c', on: 'done-z', by });
  await store.lifecycle.transition({ key: 'done-z', action: 'complete', by });
  await store.lifecycle.transition({ key: 'closed-y', action: 'close', by });
  await store.lifecycle.escalate({ key: 'esc-e', reason: 'needs a person', by });
}

export function exerciseTaskPage(harness: Harness): void {
  describe("the backlog's page", () => {
    test('pages tasks newest first by keyset, with their blockers, active job and holder', () =>
      withFixture(harness, async ({ store }) => {
        await givenBacklog(store);
        const session = await givenSession(store);
        const held = await store.claims.acquire({ key: 'a', session: session.id });
        assert.ok(held.ok);
        const seen: string[] = [];
        let before: number | undefined;
        for (;;) {
          const page = await store.observe.tasksPage({ limit: 2, beforeId: before });
          if (page.length === 0) break;
          seen.push(...page.map((row) => row.task.key));
          before = page.at(-1)?.id;
        }
        assert.deepEqual(seen, ['esc-e', 'queued-d', 'c', 'b', 'closed-y', 'done-z', 'a']);
        const rows = await store.observe.tasksPage({ limit: 10 });
        const of = (key: string) => rows.find((row) => row.task.key === key);
        // A closed dependency still blocks; a done one does not (0035).
        assert.deepEqual(of('b')?.blockers, ['a', 'closed-y']);
        assert.deepEqual(of('c')?.blockers, []);
        const queued = (await store.jobs.list({ key: 'queued-d' }))[0];
        assert.deepEqual(of('queued-d')?.job, { id: queued?.id, status: 'queued' });
        assert.equal(of('a')?.job, null);
        assert.equal(of('a')?.task.holder?.session, session.id);
        assert.deepEqual(of('a')?.task.labels, ['ui']);
      }));

    test('filters by states, project, label and blocked, and together', () =>
      withFixture(harness, async ({ store }) => {
        await givenBacklog(store);
        const keys = async (params: Parameters<Store['observe']['tasksPage']>[0]) =>
          (await store.observe.tasksPage(params)).map((row) => row.task.key);
        const active = ['open', 'in_review', 'escalated'] as const;
        assert.deepEqual(await keys({ limit: 10, states: active }), ['esc-e', 'queued-d', 'c', 'b', 'a']);
        assert.deepEqual(await keys({ limit: 10, states: ['done', 'closed'] }), ['closed-y', 'done-z']);
        assert.deepEqual(await keys({ limit: 10, project: 'web' }), ['c', 'a']);
        assert.deepEqual(await keys({ limit: 10, label: 'api' }), ['b']);
        assert.deepEqual(await keys({ limit: 10, blocked: true }), ['b']);
        assert.deepEqual(await keys({ limit: 10, blocked: true, label: 'ui' }), []);
        assert.deepEqual(await keys({ limit: 10, states: ['escalated'], blocked: false }), ['esc-e']);
        await store.lifecycle.transition({ key: 'closed-y', action: 'reopen', by });
        await store.lifecycle.transition({ key: 'closed-y', action: 'complete', by });
        await store.lifecycle.transition({ key: 'a', action: 'complete', by });
        assert.deepEqual(await keys({ limit: 10, blocked: true }), []);
      }));

    test('tasks.list filters by blocked and lists what each task waits for, by priority then key', () =>
      withFixture(harness, async ({ store }) => {
        await givenBacklog(store);
        const listed = async (params: Parameters<Store['tasks']['list']>[0]) =>
          (await store.tasks.list(params)).map((task) => [task.key, task.waitsFor]);
        assert.deepEqual(await listed({ blocked: true }), [['b', ['a', 'closed-y']]]);
        assert.deepEqual(await listed({ blocked: true, label: 'ui' }), []);
        assert.deepEqual(await listed({ blocked: false, project: 'web' }), [
          ['a', []],
          ['c', []],
        ]);
        assert.equal((await store.tasks.list()).length, 7);
        await store.lifecycle.transition({ key: 'a', action: 'complete', by });
        assert.deepEqual(await listed({ blocked: true }), [['b', ['closed-y']]]);
        // A task finished or closed while its dependency is not done waits for nothing: not blocked.
        await store.lifecycle.transition({ key: 'b', action: 'close', by });
        assert.deepEqual(await listed({ blocked: true }), []);
        const page = await store.observe.tasksPage({ limit: 10, blocked: true });
        assert.deepEqual(page, [], 'the Tasks page agrees');
      }));

    test('taskHolds names the gate or the first dependency not done of open tasks only', () =>
      withFixture(harness, async ({ store }) => {
        await givenBacklog(store);
        await store.tasks.add({ key: 'gated-f' });
        await store.lifecycle.gate({ key: 'gated-f', gate: 'design', by });
        await store.tasks.add({ key: 'g' });
        await store.lifecycle.depend({ key: 'g', on: 'esc-e', by });
        // Blocked and gated, but closed: its jobs wait for no one (a closed task's queued job never runs).
        await store.tasks.add({ key: 'h' });
        await store.lifecycle.depend({ key: 'h', on: 'a', by });
        await store.lifecycle.gate({ key: 'h', gate: 'design', by });
        await store.lifecycle.transition({ key: 'h', action: 'close', by });
        const holds = await store.observe.taskHolds(['a', 'b', 'c', 'gated-f', 'g', 'h', 'esc-e', 'nope']);
        assert.deepEqual(
          [...holds].sort((left, right) => left.key.localeCompare(right.key)),
          [
            { key: 'b', gate: null, blocker: 'a (open)' },
            { key: 'g', gate: null, blocker: 'esc-e (escalated)' },
            { key: 'gated-f', gate: 'design', blocker: null },
          ],
        );
        assert.deepEqual(await store.observe.taskHolds([]), []);
      }));
  });
}
