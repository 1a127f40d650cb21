/**
 * The dashboard's change stream (/ui/events) asks again, every few seconds, whether the token it
 * was opened with still opens: a revoked token's stream ends (with an `ended` event) instead of
 * hearing of every change for as long as the browser keeps it; another token's stream goes on.
 * Before, the token was checked only when the stream opened. Real server, real store; the
 * revocation is written to the store directly, as by another process (the token cache's memory
 * ages out, coordinator/token-cache.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitUntil } from '../support/wait.js';
import { freshSqlite, startTestServer } from './server.js';

/** An open /ui/events stream: what it has said, and whether the server ended it. */
function listen(url: string, token: string) {
  const abort = new AbortController();
  const state = { text: '', ended: false };
  const reading = (async () => {
    const response = await fetch(`${url}/ui/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    assert.equal(response.status, 200);
    const decoder = new TextDecoder();
    for await (const chunk of response.body ?? []) state.text += decoder.decode(chunk as Uint8Array);
    state.ended = true;
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) throw error;
  });
  return { state, reading, stop: () => abort.abort() };
}

describe('the dashboard change stream', () => {
  test('ends once its token is revoked; a live token goes on hearing of changes', async () => {
    const server = await startTestServer(freshSqlite(), undefined, { tokenRecheckMs: 100 }, 'required');
    const make = (name: string) => server.store.tokens.create({ scope: 'viewer', name });
    const [doomed, kept] = [await make('doomed'), await make('kept')];
    const a = listen(server.url, doomed.secret);
    const b = listen(server.url, kept.secret);
    try {
      await waitUntil(
        () => a.state.text.includes('event: hello') && b.state.text.includes('event: hello'),
        30_000,
        'both streams to open',
      );
      await server.store.tokens.revoke({ id: doomed.token.id });
      await waitUntil(() => a.state.ended, 30_000, "the revoked token's stream to end");
      assert.match(a.state.text, /event: ended\ndata: the token no longer opens: sign in again/);
      const again = await fetch(`${server.url}/ui/events`, {
        headers: { authorization: `Bearer ${doomed.secret}` },
      });
      assert.equal(again.status, 401, 'and it opens no new one');
      await again.body?.cancel();

      await server.store.tasks.add({ key: 'after-the-revocation' });
      await waitUntil(
        () => b.state.text.includes('event: change'),
        30_000,
        'the live stream to hear the change',
      );
      assert.equal(b.state.ended, false);
      assert.doesNotMatch(b.state.text, /event: ended/);
    } finally {
      a.stop();
      b.stop();
      await Promise.all([a.reading, b.reading]);
      await server.close();
    }
  });
});
