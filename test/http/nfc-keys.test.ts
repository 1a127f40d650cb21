/**
 * The HTTP API names a task in either Unicode spelling of its key (decision 0054), whatever the
 * client did before sending it: raw requests here, not the CLI (which composes keys itself). A
 * key sent decomposed (e + U+0301) is stored composed (U+00E9); a claim of one spelling holds the
 * other, on the short way for claims (fast-claims.ts) and through Hono alike, on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

const COMPOSED = 'caf\u00e9';
const DECOMPOSED = 'cafe\u0301';
const path = (key: string): string => `/v1/claims/${encodeURIComponent(key)}`;

for (const db of bothEngines()) {
  describe(`a task key in either spelling over HTTP (${db.name})`, () => {
    test('a decomposed key is added composed; a claim in one spelling holds the other', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'nfc-test' });
        const added = await call(server.url, 'POST', '/v1/tasks', {
          token: secret,
          body: { key: DECOMPOSED },
        });
        assert.equal(added.status, 200, JSON.stringify(added.body));
        assert.equal(added.body['key'], COMPOSED);
        const twice = await call(server.url, 'POST', '/v1/tasks', { token: secret, body: { key: COMPOSED } });
        assert.equal(twice.status, 409, JSON.stringify(twice.body));
        const [first, second] = [
          (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id,
          (await store.sessions.start({ kind: 'agent', host: 'h', pid: 2 })).id,
        ];
        // The short way (plain JSON body), then Hono (a charset in the Content-Type).
        const claimed = await call(server.url, 'POST', path(DECOMPOSED), {
          token: secret,
          body: { session: first },
        });
        assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
        assert.equal(claimed.body['key'], COMPOSED);
        const held = await call(server.url, 'POST', path(COMPOSED), {
          token: secret,
          body: { session: second },
        });
        assert.equal(held.status, 409, JSON.stringify(held.body));
        const viaHono = await fetch(`${server.url}${path(DECOMPOSED)}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json; charset=utf-8' },
          body: JSON.stringify({ session: second }),
        });
        assert.equal(viaHono.status, 409, await viaHono.text());
        const released = await call(server.url, 'POST', `${path(COMPOSED)}/release`, {
          token: secret,
          body: { session: first, epoch: claimed.body['epoch'], outcome: 'done' },
        });
        assert.equal(released.status, 200, JSON.stringify(released.body));
        const keys = (await store.tasks.list({})).map((task) => [task.key, task.state]);
        assert.deepEqual(keys, [[COMPOSED, 'done']]);
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
