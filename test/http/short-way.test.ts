/**
 * `baton serve` answers a plainly well-formed claim and release the short way (src/http/fast-claims.ts,
 * installed by src/http/server.ts), without Hono: `/metrics` counts them by route, and a request
 * that is not plainly one (here a charset in its Content-Type) is left to Hono and not counted.
 * Without the short way in server.ts the answers would be the same, byte for byte; only this
 * count (and the bench) would show it gone.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliOn } from '../support/cli.js';
import { sqliteDatabase } from '../support/databases.js';
import { call, serve } from './support.js';

/** The short way's count for a route, as `/metrics` gives it (0 when it has none yet). */
async function shortWay(url: string, route: 'claim' | 'release'): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = new RegExp(`^baton_http_short_way_total\\{route="${route}"\\} (\\d+)$`, 'm').exec(text);
  return line === null ? 0 : Number(line[1]);
}

void describe('baton serve, the short way for claims and releases', () => {
  test('answers a plain claim and release without Hono, counted on /metrics; leaves the rest to Hono', async () => {
    const url = await sqliteDatabase().fresh();
    const cli = cliOn(url);
    const session = Number(await cli.session());
    for (const key of ['k1', 'k2']) assert.equal((await cli.run('task', 'add', key)).code, 0);
    const agent = await cli.agentToken(session);
    const server = await serve(url);
    try {
      assert.deepEqual([await shortWay(server.url, 'claim'), await shortWay(server.url, 'release')], [0, 0]);
      const claimed = await call(server.url, 'POST', '/v1/claims/k1', {
        token: agent.token,
        body: { session },
      });
      assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
      const released = await call(server.url, 'POST', '/v1/claims/k1/release', {
        token: agent.token,
        body: { session, epoch: claimed.body['epoch'] },
      });
      assert.equal(released.status, 200, JSON.stringify(released.body));
      assert.deepEqual([await shortWay(server.url, 'claim'), await shortWay(server.url, 'release')], [1, 1]);
      // Not plainly well-formed: Hono answers it, the same way, and the short way does not count it.
      const viaHono = await fetch(`${server.url}/v1/claims/k2`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.token}`,
          'content-type': 'application/json; charset=utf-8',
        },
        body: JSON.stringify({ session }),
      });
      assert.equal(viaHono.status, 200, await viaHono.text());
      assert.equal(await shortWay(server.url, 'claim'), 1);
      assert.equal(
        (await cli.json<{ holder: { session: number } }>(0, 'task', 'show', 'k2')).holder.session,
        session,
      );
    } finally {
      await server.stop();
    }
  });
});
