/**
 * GET /v1/sessions/{id}/claims (decision 0060, for baton_status) answers each live claim as the
 * tool shows it: key, epoch, host, claimedAt, heartbeatAt, and nothing of the store's row beyond
 * them (the holder's pid, name and TTL, the task's job with its command). The read is open on a
 * loopback bind, so what it answers is what anyone there may see. The OpenAPI document describes
 * the same fields, and no others. A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

const CLAIM_FIELDS = ['claimedAt', 'epoch', 'heartbeatAt', 'host', 'key'];
const ANSWER_FIELDS = ['claims', 'session', 'tokenSession'];

interface Schema {
  readonly properties?: Record<string, unknown>;
  readonly additionalProperties?: unknown;
}

for (const db of bothEngines()) {
  describe(`GET /v1/sessions/{id}/claims (${db.name})`, () => {
    test("answers each claim's key, epoch, host and times, and no other field", async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        await store.tasks.add({ key: 'held', title: 'held' });
        await store.jobs.enqueue({ key: 'held', command: 'echo SECRET-COMMAND' });
        const session = await store.sessions.start({
          kind: 'agent',
          host: 'box-1',
          pid: 4242,
          name: 'claude',
        });
        const claim = await store.claims.acquire({ key: 'held', session: session.id });
        assert.ok(claim.ok);

        const answer = await call(server.url, 'GET', `/v1/sessions/${session.id}/claims`);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.deepEqual(Object.keys(answer.body).sort(), ANSWER_FIELDS);
        assert.equal(answer.body['session'], session.id);
        assert.equal(answer.body['tokenSession'], null);
        const claims = answer.body['claims'] as Record<string, unknown>[];
        assert.equal(claims.length, 1);
        const [shown] = claims;
        assert.deepEqual(Object.keys(shown ?? {}).sort(), CLAIM_FIELDS, JSON.stringify(shown));
        assert.deepEqual([shown?.['key'], shown?.['epoch'], shown?.['host']], ['held', 1, 'box-1']);
        for (const time of ['claimedAt', 'heartbeatAt']) {
          assert.ok(!Number.isNaN(Date.parse(String(shown?.[time]))), `${time}: ${String(shown?.[time])}`);
        }
        assert.doesNotMatch(JSON.stringify(answer.body), /SECRET-COMMAND|4242|claude/);

        const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
          components: { schemas: Record<string, Schema> };
        };
        const { SessionClaims, HeldClaim } = doc.components.schemas;
        assert.deepEqual(Object.keys(SessionClaims?.properties ?? {}).sort(), ANSWER_FIELDS);
        assert.deepEqual(Object.keys(HeldClaim?.properties ?? {}).sort(), CLAIM_FIELDS);
        assert.equal(HeldClaim?.additionalProperties, false);
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
