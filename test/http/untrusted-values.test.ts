/**
 * Values a caller chooses, answered with a 4xx or as given, never a 500. An effect's payload is the agent's own JSON and comes back as it went in, over HTTP and through
 * the HTTP client: keys named like Baton's time fields (`at`, `since`, `createdAt`) are not
 * Instants there. A number no date can hold (1e300) under such a key once made the recording
 * answer 500 after the effect was stored, and every later read of its task (the task view lists
 * its `pr` effects) answer 500 too. A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fromWire } from '../../src/agents/api-connection.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines, type TestDatabase } from '../support/databases.js';
import type { Store } from '../../src/store/store.js';
import { call, serve, type Served } from './support.js';

const PAYLOAD = {
  url: 'https://example.invalid/pr/1',
  at: 1e300,
  since: 5,
  createdAt: 'not a date',
  checks: [{ updatedAt: -9e15, finishedAt: '2026-12-04T00:00:00.000Z' }],
};

/** A fresh database of `db`, a real `baton serve` on it, and an operator token's secret. */
async function withServer(
  db: TestDatabase,
  body: (store: Store, server: Served, secret: string) => Promise<void>,
): Promise<void> {
  const url = await db.fresh();
  const store = await openStore(url);
  const server = await serve(url);
  try {
    const { secret } = await store.tokens.create({ scope: 'operator', name: 'untrusted-values' });
    await body(store, server, secret);
  } finally {
    await server.stop();
    await store.close();
  }
}

for (const db of bothEngines()) {
  describe(`an effect's payload over HTTP (${db.name})`, () => {
    test('is answered as recorded, by the recording, the task and its effects', async () => {
      await withServer(db, async (store, server, secret) => {
        await store.tasks.add({ key: 'k1' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id;
        const claimed = await store.claims.acquire({ key: 'k1', session });
        assert.ok(claimed.ok);
        const body = { key: 'k1', session, epoch: claimed.claim.epoch, kind: 'pr', payload: PAYLOAD };

        const recorded = await call(server.url, 'POST', '/v1/effects', { token: secret, body });
        assert.equal(recorded.status, 200, JSON.stringify(recorded.body));
        assert.deepEqual(recorded.body['payload'], PAYLOAD);
        assert.equal(typeof recorded.body['recordedAt'], 'string', "the effect's own time is still ISO");

        const listed = await call(server.url, 'GET', '/v1/tasks/k1/effects', { token: secret });
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        const effects = listed.body as unknown as { payload: unknown }[];
        assert.deepEqual(effects[0]?.payload, PAYLOAD);
        assert.deepEqual(
          fromWire<{ payload: unknown }[]>(effects)[0]?.payload,
          PAYLOAD,
          'the client keeps it too',
        );

        const task = await call(server.url, 'GET', '/v1/tasks/k1', { token: secret });
        assert.equal(task.status, 200, JSON.stringify(task.body));
        assert.match(JSON.stringify(task.body), /"at":1e\+300/);
      });
    });

    test('a report asked for times no date holds is refused with 400, one that does answers', async () => {
      await withServer(db, async (store, server, secret) => {
        for (const since of ['99999999999999999999', '9000000000000000000', '8640000000000001']) {
          const refused = await call(server.url, 'GET', `/v1/report/sessions?since=${since}`, {
            token: secret,
          });
          assert.equal(refused.status, 400, `${since}: ${JSON.stringify(refused.body)}`);
          assert.match(
            JSON.stringify(refused.body),
            /since: must be epoch ms, a whole number from 0 to .* or an ISO time/,
          );
        }
        const answered = await call(server.url, 'GET', '/v1/report/sessions?since=8640000000000000', {
          token: secret,
        });
        assert.equal(answered.status, 200, JSON.stringify(answered.body));
      });
    });
  });
}
