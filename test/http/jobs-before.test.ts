/**
 * GET /v1/jobs?before=ID (the next page of `queue list`, decision 0041): the finished jobs older
 * than the id, newest first, on a real `baton serve` on both engines; a `before` that is not a
 * positive whole number is 400 `invalid_input`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve, wholeNumberWords } from './support.js';

for (const db of bothEngines()) {
  describe(`GET /v1/jobs?before (${db.name})`, () => {
    test('lists the finished jobs older than the id; a bad id is 400', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'viewer', name: 'before' });
        const ids: number[] = [];
        for (const key of ['a', 'b', 'c']) {
          const { job } = await store.jobs.enqueue({ key });
          assert.ok((await store.jobs.cancel({ id: job.id })).ok);
          ids.push(job.id);
        }
        const { job: queued } = await store.jobs.enqueue({ key: 'live' });
        const get = (query: string) => call(server.url, 'GET', `/v1/jobs${query}`, { token: secret });
        const all = await get('');
        assert.deepEqual(
          (all.body as unknown as { id: number }[]).map((job) => job.id),
          [queued.id, ids[2], ids[1], ids[0]],
        );
        const page = await get(`?before=${ids[2]}&limit=1`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.deepEqual(
          (page.body as unknown as { id: number }[]).map((job) => job.id),
          [ids[1]],
        );
        for (const bad of ['abc', '0', '-1', '2.5', '05', '+5', '1e1']) {
          const refused = await get(`?before=${encodeURIComponent(bad)}`);
          assert.equal(refused.status, 400, `${bad}: ${JSON.stringify(refused.body)}`);
          const error = refused.body['error'] as { code: string; message: string };
          assert.equal(error.code, 'invalid_input');
          assert.equal(error.message, wholeNumberWords('before', 1, Number.MAX_SAFE_INTEGER, bad));
        }
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
