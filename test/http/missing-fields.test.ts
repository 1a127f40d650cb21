/**
 * A field the request left out is `<field> is required`, told from zod's issue (its code,
 * invalid_type) and the request itself (nothing at the path), not from zod's words: the
 * route here gives its fields messages of its own, as a newer zod may word them, and the answer
 * is the same. A field given with the wrong type, null included, is not "required"; the path of a
 * nested field is named whole; a query parameter left out is told the same way. Through the API's
 * own Hono app (newApi, route, jsonBody), as every route declares itself.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from '@hono/zod-openapi';
import { jsonBody, newApi, route } from '../../src/http/kit.js';

/** Words that say nothing of what zod received: the refusal must not read them for it. */
const own = { error: () => 'wants a text of its own' };

function app() {
  const api = newApi();
  const Body = z.strictObject({
    reason: z.string(own),
    finish: z.array(z.strictObject({ epoch: z.number(own) })).optional(),
  });
  api.openapi(
    route({ method: 'post', path: '/t', request: jsonBody(Body), responses: { 200: { description: 'ok' } } }),
    (context) => context.json({ ok: true }, 200),
  );
  api.openapi(
    route({
      method: 'get',
      path: '/q',
      request: { query: z.object({ session: z.string(own) }) },
      responses: { 200: { description: 'ok' } },
    }),
    (context) => context.json({ ok: true }, 200),
  );
  return api;
}

async function refusal(path: string, body?: unknown): Promise<string> {
  const init =
    body === undefined
      ? { method: 'GET' }
      : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const answer = await app().request(path, init);
  assert.equal(answer.status, 400, path);
  return ((await answer.json()) as { error: { message: string } }).error.message;
}

describe('a field left out is told from the issue, not from its words', () => {
  test('left out: required; given wrong, null included: what is wrong with it', async () => {
    assert.equal(await refusal('/t', {}), 'reason is required');
    assert.equal(await refusal('/t', { reason: 'r', finish: [{}] }), 'finish.0.epoch is required');
    assert.equal(await refusal('/q'), 'session is required');
    assert.equal(await refusal('/t', { reason: 5 }), 'reason: wants a text of its own');
    assert.equal(await refusal('/t', { reason: null }), 'reason: wants a text of its own');
    assert.equal(
      await refusal('/t', { reason: 'r', finish: [{ epoch: '1' }] }),
      'finish.0.epoch: wants a text of its own',
    );
    const taken = await app().request('/t', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'r', finish: [{ epoch: 1 }] }),
    });
    assert.equal(taken.status, 200);
  });
});
