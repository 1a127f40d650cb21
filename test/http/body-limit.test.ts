/**
 * A body has a size bound. Without one, a holder of any token (here an agent's, the least a run
 * is given) sent hundreds of MB that the server read whole into memory before the schema refused
 * them: 400 MB took a `baton serve` from 70 MB to 1.6 GB, and a few at once end `baton up` with
 * every agent it runs. Over BODY_MAX the answer is 413 `payload_too_large`, whether the size is
 * declared (Content-Length) or only sent (chunked), on the API and on the sign-in form alike; a
 * large valid body still goes through, and the server answers on.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BODY_MAX } from '../../src/http/app.js';
import { cliOn } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

/** A JSON effect whose payload string makes the body `bytes` long. */
function effectOf(session: number, bytes: number): string {
  const head = `{"key":"k","session":${session},"epoch":1,"kind":"note","payload":"`;
  return `${head}${'a'.repeat(bytes - head.length - 2)}"}`;
}

/** The same text, sent in chunks without a Content-Length. */
function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 1024 * 1024));
      at += 1024 * 1024;
    },
  });
}

for (const db of bothEngines()) {
  void describe(`request bodies are bounded (${db.name})`, () => {
    test('a body over the bound is 413 before it is read whole; one under it goes through', async () => {
      const url = await db.fresh();
      const cli = cliOn(url);
      const session = Number(await cli.session());
      assert.equal((await cli.run('task', 'add', 'k')).code, 0);
      assert.equal((await cli.run('claim', 'k', '--session', String(session))).code, 0);
      const agent = await cli.agentToken(session);
      const server = await serve(url);
      try {
        const headers = { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' };
        const over = effectOf(session, BODY_MAX + 1);
        const sent = [
          await fetch(`${server.url}/v1/effects`, { method: 'POST', headers, body: over }),
          await fetch(`${server.url}/v1/effects`, {
            method: 'POST',
            headers,
            body: chunked(over),
            duplex: 'half',
          }),
          await fetch(`${server.url}/login`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
            body: `token=${'a'.repeat(BODY_MAX)}`,
          }),
        ];
        for (const [i, response] of sent.entries()) {
          const body = (await response.json()) as { error: { code: string } };
          assert.deepEqual([response.status, body.error.code], [413, 'payload_too_large'], `request ${i}`);
        }
        // Under the bound, a body is read and judged as ever: this one's payload is too long for
        // an effect (400 naming it), and a small one is recorded.
        const under = await call(server.url, 'POST', '/v1/effects', {
          token: agent.token,
          body: JSON.parse(effectOf(session, 1024 * 1024)) as unknown,
        });
        assert.equal(under.status, 400, JSON.stringify(under.body).slice(0, 300));
        const small = await call(server.url, 'POST', '/v1/effects', {
          token: agent.token,
          body: { key: 'k', session, epoch: 1, kind: 'note' },
        });
        assert.equal(small.status, 200, JSON.stringify(small.body));
      } finally {
        await server.stop();
      }
    });
  });
}
