/**
 * The run time limit over the HTTP API (docs/decisions/0037-run-time-limit.md), a real `baton
 * serve` on both engines: POST /v1/jobs takes `timeLimit` as a duration or a number of seconds,
 * the job carries it as `timeLimitMs`, and a bad one is 400 `invalid_input` with nothing queued.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

for (const db of bothEngines()) {
  describe(`run time limit over HTTP (${db.name})`, () => {
    test('POST /v1/jobs stores timeLimit with the job; a bad one is refused and queues nothing', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'time-limit' });
        const post = (body: unknown) => call(server.url, 'POST', '/v1/jobs', { token: secret, body });
        for (const [key, timeLimit, ms] of [
          ['words', '90m', 5_400_000],
          ['seconds', 30, 30_000],
        ] as const) {
          const queued = await post({ key, command: 'true', timeLimit });
          assert.equal(queued.status, 200, JSON.stringify(queued.body));
          const job = queued.body['job'] as { id: number; timeLimitMs: number | null };
          assert.equal(job.timeLimitMs, ms);
          const read = await call(server.url, 'GET', `/v1/jobs/${job.id}`, { token: secret });
          assert.equal(read.body['timeLimitMs'], ms);
        }
        const plain = await post({ key: 'plain', command: 'true' });
        assert.equal((plain.body['job'] as { timeLimitMs: unknown }).timeLimitMs, null);
        for (const timeLimit of ['0', '-5m', 'abc', 0, -1, '8d']) {
          const refused = await post({ key: 'bad', command: 'true', timeLimit });
          assert.equal(refused.status, 400, `${JSON.stringify(timeLimit)}: ${JSON.stringify(refused.body)}`);
          const error = refused.body['error'] as { code: string; message: string };
          assert.equal(error.code, 'invalid_input');
          assert.match(error.message, /^time limit must be /);
        }
        assert.deepEqual(await store.jobs.list({ key: 'bad' }), [], 'nothing queued');
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
