/**
 * `GET /v1/tasks?label=L`: the tasks with that label, in any state; a label no task has is 404
 * `label L not found` naming the known ones, as `POST /v1/next` says of it, not an empty list that
 * reads as "nothing to do". Likewise `GET /v1/audit?key=K` for a task no one added: 404, not an
 * empty history. A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

for (const db of bothEngines()) {
  describe(`task list by label over HTTP (${db.name})`, () => {
    test('lists the tasks with a label and answers 404 naming the known ones for a label no task has', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'task-list-test' });
        await store.tasks.add({ key: 'a1', labels: ['ui'] });
        await store.tasks.add({ key: 'b1', labels: ['legacy', 'ui'] });
        await store.tasks.add({ key: 'c1' });
        const list = (query: string) => call(server.url, 'GET', `/v1/tasks${query}`, { token: secret });
        const keys = (answer: { body: unknown }) =>
          (answer.body as { key: string }[]).map((task) => task.key);

        const ui = await list('?label=ui');
        assert.equal(ui.status, 200, JSON.stringify(ui.body));
        assert.deepEqual(keys(ui), ['a1', 'b1']);
        assert.deepEqual(keys(await list('?label=legacy')), ['b1']);
        const none = await list('?label=legacy&state=done');
        assert.equal(
          none.status,
          200,
          'a known label with nothing left by the other filters is an empty list',
        );
        assert.deepEqual(keys(none), []);

        const refused = await list('?label=nope');
        assert.equal(refused.status, 404, JSON.stringify(refused.body));
        const error = refused.body['error'] as { code: string; message: string; hint: string };
        assert.deepEqual(
          [error.code, error.message, error.hint],
          ['not_found', 'label nope not found', 'known labels: legacy, ui'],
        );
      } finally {
        await server.stop();
        await store.close();
      }
    });

    test('answers 404 to the ledger of a task no one added, and the rows of a known one', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'audit-test' });
        await store.tasks.add({ key: 'a1' });
        const audit = (query: string) => call(server.url, 'GET', `/v1/audit${query}`, { token: secret });
        const refused = await audit('?key=nope');
        assert.equal(refused.status, 404, JSON.stringify(refused.body));
        const error = refused.body['error'] as { code: string; message: string };
        assert.deepEqual([error.code, error.message], ['not_found', 'task nope not found']);
        const known = await audit('?key=a1');
        assert.equal(known.status, 200, JSON.stringify(known.body));
        assert.deepEqual(
          (known.body as unknown as { type: string }[]).map((entry) => entry.type),
          ['task:added'],
        );
        assert.deepEqual((await audit('?key=a1&type=job:stalled')).body, [], 'known, no such rows');
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
