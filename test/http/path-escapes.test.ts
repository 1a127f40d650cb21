/**
 * A path or query whose %-escapes do not decode is refused with 400 and changes nothing (once
 * taken as written: `/v1/tasks/a%FFb/close` closed the task whose key is the text `a%FFb`). A
 * real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, dumpTables, serve } from './support.js';

for (const db of bothEngines()) {
  describe(`%-escapes that are not UTF-8 over HTTP (${db.name})`, () => {
    test('a %-escape that does not decode is 400, one line, and changes nothing', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'utf8' });
        await store.tasks.add({ key: 'a%FFb' });
        await store.tasks.add({ key: 'k' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id;
        const claimed = await store.claims.acquire({ key: 'k', session });
        assert.ok(claimed.ok);
        const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
        const send = async (method: string, path: string, body?: Buffer) => {
          const response = await fetch(`${server.url}${path}`, { method, headers, ...(body && { body }) });
          return {
            status: response.status,
            body: (await response.json()) as { error?: { message: string } },
          };
        };
        const before = await dumpTables(db, raw);
        const escaped = await call(server.url, 'POST', '/v1/tasks', {
          token: secret,
          body: { key: 'U\ud800' },
        });
        assert.equal(escaped.status, 400, 'a JSON-escaped lone surrogate is refused as before');

        for (const [method, path] of [
          ['POST', '/v1/tasks/a%FFb/close'],
          ['GET', '/v1/tasks/a%FFb'],
          ['POST', '/v1/claims/a%FF'],
          ['GET', '/v1/tasks/50%'],
          ['GET', '/v1/audit?key=a%FFb'],
        ] as const) {
          const r = await send(method, path, method === 'POST' ? Buffer.from('{}') : undefined);
          assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
          const message = `the request's path or query has a %-escape that is not UTF-8: "${path}"`;
          assert.equal(r.body.error?.message, message, `${method} ${path}`);
        }
        assert.equal(await dumpTables(db, raw), before, 'nothing changed');
        const shown = await send('GET', '/v1/tasks/a%25FFb');
        assert.equal(shown.status, 200, 'the key written with %25 is found');
        assert.equal((await store.tasks.get('a%FFb'))?.state, 'open');
      } finally {
        await raw.close();
        await server.stop();
        await store.close();
      }
    });
  });
}
