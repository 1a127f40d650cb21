/**
 * A JSON body is UTF-8 (RFC 8259). One that is not (a Latin-1 é, a stray 0xFF, an overlong or a
 * surrogate's encoding) was decoded leniently and its U+FFFD replacement characters stored, in a
 * task's title or a progress note. It is 400 with one line saying so, and nothing changes; the
 * same text sent as UTF-8 is taken and stored as sent. A claim's body, which the short way
 * (fast-claims.ts) reads itself, is refused the same way. A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, dumpTables, serve } from './support.js';

/** The bytes of `before`, then `bad`, then `after`: a JSON text with bytes that are not UTF-8 in it. */
const bytesOf = (before: string, bad: readonly number[], after: string): Uint8Array =>
  new Uint8Array([...Buffer.from(before, 'utf8'), ...bad, ...Buffer.from(after, 'utf8')]);

for (const db of bothEngines()) {
  describe(`a JSON body that is not UTF-8 is refused (${db.name})`, () => {
    test('400 naming it, nothing stored; the same text in UTF-8 is taken as sent', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'utf8' });
        await store.tasks.add({ key: 'k' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id;
        const post = (path: string, body: Uint8Array) =>
          fetch(`${server.url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body,
          });
        const before = await dumpTables(db, raw);
        const sent: [string, Uint8Array][] = [
          ['/v1/tasks', bytesOf('{"key":"latin","title":"caf', [0xe9], '"}')],
          ['/v1/tasks', bytesOf('{"key":"ff","title":"a', [0xff], 'b"}')],
          ['/v1/tasks', bytesOf('{"key":"overlong","title":"', [0xc0, 0xaf], '"}')],
          ['/v1/tasks', bytesOf('{"key":"surrogate","title":"', [0xed, 0xa0, 0x80], '"}')],
          ['/v1/tasks', bytesOf('{"key":"cut","title":"', [0xe2, 0x98], '"}')],
          [`/v1/sessions/${session}/progress`, bytesOf('{"toolCalls":1,"note":"', [0xff, 0xfe], '"}')],
          ['/v1/claims/k', bytesOf(`{"session":${session},"`, [0xff], '":1}')],
        ];
        for (const [path, body] of sent) {
          const answer = await post(path, body);
          const text = await answer.text();
          assert.equal(answer.status, 400, `${path}: ${text}`);
          const error = (JSON.parse(text) as { error: { code: string; message: string; hint: string } })
            .error;
          assert.equal(error.code, 'invalid_input');
          assert.match(
            error.message,
            /^the body is not valid UTF-8: POST \/v1\/[^ ]+ takes JSON, which is UTF-8 text$/,
          );
          assert.match(error.hint, /encode the body as UTF-8/);
        }
        assert.equal(await dumpTables(db, raw), before, 'nothing changed');

        const title = 'café ☕ 𝄞';
        const added = await post('/v1/tasks', new TextEncoder().encode(JSON.stringify({ key: 'ok', title })));
        assert.equal(added.status, 200, await added.clone().text());
        assert.equal((await store.tasks.get('ok'))?.title, title, 'stored as sent');
        const note = await call(server.url, 'POST', `/v1/sessions/${session}/progress`, {
          token: secret,
          body: { toolCalls: 1, note: 'ünïcode' },
        });
        assert.equal(note.status, 200, JSON.stringify(note.body));
        const claimed = await call(server.url, 'POST', '/v1/claims/k', { token: secret, body: { session } });
        assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
      } finally {
        await raw.close();
        await server.stop();
        await store.close();
      }
    });
  });
}
