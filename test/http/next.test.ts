/**
 * `POST /v1/next` when every open task waits behind a gate: 404 with the gated tasks in the
 * error's details (and their keys and gates in the hint), so a caller over HTTP learns what it
 * would learn from `baton next` on the database. A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

for (const db of bothEngines()) {
  describe(`next over HTTP with only gated tasks left (${db.name})`, () => {
    test('answers 404 naming each gated task and its gate, then hands one out once approved', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'next-test' });
        await store.tasks.add({ key: 'designed', title: 'needs a design' });
        await store.tasks.add({ key: 'also-designed' });
        for (const key of ['designed', 'also-designed'])
          await store.lifecycle.gate({ key, gate: 'design', by: { name: 'test' } });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id;

        const refused = await call(server.url, 'POST', '/v1/next', { token: secret, body: { session } });
        assert.equal(refused.status, 404, JSON.stringify(refused.body));
        const error = refused.body['error'] as {
          code: string;
          message: string;
          hint: string;
          details: { gated: { key: string; gate: string }[]; session: number | null };
        };
        assert.equal(error.code, 'not_found');
        assert.match(error.message, /^no eligible task/);
        assert.deepEqual(error.details.gated.map((t) => [t.key, t.gate]).sort(), [
          ['also-designed', 'design'],
          ['designed', 'design'],
        ]);
        assert.match(error.hint, /designed: waiting for design approval/);

        // No session named: the one started for the call is ended when it finds nothing.
        const started = await call(server.url, 'POST', '/v1/next', { token: secret, body: {} });
        assert.equal(started.status, 404);
        const startedError = started.body['error'] as { message: string; details: Record<string, unknown> };
        assert.equal(startedError.message, 'no eligible task: nothing open is free');
        const live = await call(server.url, 'GET', '/v1/sessions?live=true', { token: secret });
        const liveIds = (live.body as unknown as { id: number }[]).map((s) => s.id);
        assert.deepEqual(liveIds, [session], 'only the caller’s own session is live');
        const all = await store.sessions.list();
        assert.equal(all.length, 2, 'one session was started for the call');
        assert.equal(all.find((s) => s.id !== session)?.state, 'ended');

        await store.lifecycle.approveGate({ key: 'designed', gate: 'design', by: { name: 'test' } });
        const got = await call(server.url, 'POST', '/v1/next', { token: secret, body: { session } });
        assert.equal(got.status, 200, JSON.stringify(got.body));
        assert.equal(got.body['key'], 'designed');
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
