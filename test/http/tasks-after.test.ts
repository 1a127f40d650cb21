/**
 * GET /v1/tasks?after=KEY (the next page of `task list`, decision 0045): the tasks after that one
 * by priority, then key, on a real `baton serve` on both engines; an `after` no task has, or one
 * that is no task key, is 400 `invalid_input`, as the CLI's exit 2.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

for (const db of bothEngines()) {
  describe(`GET /v1/tasks?after (${db.name})`, () => {
    test('lists the tasks after the key, by priority then key; a bad key is 400', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'viewer', name: 'after' });
        for (const [key, priority] of [
          ['c', 1],
          ['a', 2],
          ['b', 2],
          ['github:acme/api#7', 3],
        ] as const) {
          await store.tasks.add({ key, priority });
        }
        const get = (query: string) => call(server.url, 'GET', `/v1/tasks${query}`, { token: secret });
        const keys = (body: unknown) => (body as { key: string }[]).map((task) => task.key);
        assert.deepEqual(keys((await get('')).body), ['c', 'a', 'b', 'github:acme/api#7']);
        const page = await get('?after=a&limit=1');
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.deepEqual(keys(page.body), ['b']);
        assert.deepEqual(keys((await get(`?after=${encodeURIComponent('b')}`)).body), ['github:acme/api#7']);
        assert.deepEqual(keys((await get(`?after=${encodeURIComponent('github:acme/api#7')}`)).body), []);
        for (const [bad, message] of [
          ['nope', /^after must be the key of a task, and no task has the key "nope"/],
          ['', /^task key is missing/],
        ] as const) {
          const refused = await get(`?after=${bad}`);
          assert.equal(refused.status, 400, `${bad}: ${JSON.stringify(refused.body)}`);
          const error = refused.body['error'] as { code: string; message: string };
          assert.equal(error.code, 'invalid_input');
          assert.match(error.message, message);
        }
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
