/**
 * A session that gives an epoch other than its own live claim's is told the epoch it holds, not
 * that someone fenced it off (docs/decisions/0059): over HTTP (409 `fenced`, nothing changed), the
 * CLI on the database (exit 3) and `baton mcp` over the API. Another session's epoch keeps its words.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { baton } from '../support/cli.js';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import { connect, structured } from '../support/mcp-client.js';
import { call, serve } from './support.js';

type ErrorBody = { code: string; message: string; hint: string };

for (const db of bothEngines()) {
  describe(`a wrong epoch of one's own claim (${db.name})`, () => {
    test('HTTP and the CLI name the epoch the session holds; another session is still told who holds it', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        await store.tasks.add({ key: 'a' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'box', pid: 1, ttlMs: 3_600_000 }))
          .id;
        const { secret } = await store.tokens.create({ scope: 'agent', session });
        const claimed = await call(server.url, 'POST', '/v1/claims/a', { token: secret, body: { session } });
        assert.equal(claimed.body['epoch'], 1);
        const you = `you hold a at epoch 1 \\(session ${session} on box since \\S+\\); use that epoch$`;
        const beat = await call(server.url, 'POST', '/v1/claims/a/heartbeat', {
          token: secret,
          body: { session, epoch: 2 },
        });
        assert.equal(beat.status, 409);
        const error = beat.body['error'] as ErrorBody;
        assert.equal(error.code, 'fenced');
        assert.match(error.message, new RegExp(`^epoch 2 was never granted for a: ${you}`));
        assert.equal(error.hint, "nothing changed; give epoch 1, your claim's, and carry on");
        const release = await call(server.url, 'POST', '/v1/claims/a/release', {
          token: secret,
          body: { session, epoch: 2, outcome: 'done' },
        });
        assert.equal(release.status, 409);
        assert.equal((await store.tasks.get('a'))?.state, 'open', 'nothing changed');
        assert.equal((await store.claims.current('a'))?.epoch, 1);

        const cli = await baton(url, 'heartbeat', String(session), '--key', 'a', '--epoch', '2');
        assert.equal(cli.code, 3, cli.stderr);
        assert.match(
          cli.stderr.trim(),
          new RegExp(`^baton: epoch 2 was never granted for a: ${you.slice(0, -1)} — nothing changed`),
        );

        // Another session's wrong epoch is still a fence, naming the holder.
        const other = (await store.sessions.start({ kind: 'agent', host: 'far', pid: 2, ttlMs: 3_600_000 }))
          .id;
        const theirs = await baton(url, 'heartbeat', String(other), '--key', 'a', '--epoch', '2');
        assert.equal(theirs.code, 3);
        assert.match(
          theirs.stderr,
          new RegExp(`epoch 2 was never granted for a: it is held by session ${session} on box`),
        );
        assert.match(theirs.stderr, /give the epoch your claim printed/);
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}

describe('a wrong epoch of its own claim, baton mcp over the API (SQLite)', () => {
  test('answers wrong_epoch with the epoch to use, and no stop', async () => {
    const url = await sqliteDatabase().fresh();
    const store = await openStore(url);
    const server = await serve(url);
    try {
      await store.tasks.add({ key: 'a' });
      const session = (await store.sessions.start({ kind: 'agent', host: 'box', pid: 1, ttlMs: 3_600_000 }))
        .id;
      const { secret } = await store.tokens.create({ scope: 'agent', session });
      const client = await connect(url, {
        BATON_URL: server.url,
        BATON_TOKEN: secret,
        BATON_SESSION: String(session),
      });
      try {
        assert.equal(
          structured(await client.callTool({ name: 'baton_claim', arguments: { key: 'a' } })).epoch,
          1,
        );
        const wrong = structured(
          await client.callTool({ name: 'baton_heartbeat', arguments: { key: 'a', epoch: 2 } }),
        );
        assert.equal(wrong.ok, false);
        assert.equal(wrong.reason, 'wrong_epoch');
        assert.match(wrong.message ?? '', /^Baton: epoch 2 was never granted for a: you hold a at epoch 1 /);
        assert.match(
          wrong.message ?? '',
          /Nothing changed: keep working on a, and give epoch 1 from now on\.$/,
        );
      } finally {
        await client.close();
      }
    } finally {
      await server.stop();
      await store.close();
    }
  });
});
