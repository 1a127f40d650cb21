import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Token } from '../core/token.js';
import { openStore } from '../store/open.js';
import { bothEngines } from '../../test/support/databases.js';
import { Coordinator } from './coordinator.js';
import { TokenCache } from './token-cache.js';

const token = (id: string): Token => ({
  id,
  scope: 'viewer',
  session: null,
  host: null,
  task: null,
  name: null,
  createdAt: 0,
  expiresAt: null,
  revokedAt: null,
});

describe('the cache of verified tokens', () => {
  test('keeps a token for its age and no longer, and forgets a revoked one at once', () => {
    let now = 0;
    const cache = new TokenCache(() => now, 2_000);
    cache.put('s1', token('a'), 0);
    cache.put('s2', token('b'), 0);
    now = 1_999;
    assert.equal(cache.get('s1')?.id, 'a');
    cache.forget('b');
    assert.equal(cache.get('s2'), null);
    now = 2_000;
    assert.equal(cache.get('s1'), null);
  });

  test('does not keep a token revoked while its check was asking the store', () => {
    let now = 10;
    const cache = new TokenCache(() => now, 2_000);
    const askedAt = cache.clock();
    now = 20;
    cache.forget('a');
    cache.put('s1', token('a'), askedAt);
    assert.equal(cache.get('s1'), null);
    now = 30;
    cache.put('s1', token('a'), cache.clock());
    assert.equal(cache.get('s1')?.id, 'a');
  });
});

for (const db of bothEngines()) {
  describe(`a token's check through the coordinator (${db.name})`, () => {
    test('answers a revoked token 401-worthy at once when this process revoked it', async () => {
      const store = await openStore(await db.fresh());
      try {
        const tokens = new Coordinator(store).tokens;
        const { token: made, secret } = await store.tokens.create({ scope: 'viewer' });
        assert.equal((await tokens.verify(secret)).ok, true);
        assert.equal((await tokens.verify(secret)).ok, true);
        await tokens.revoke(made.id);
        assert.deepEqual(await tokens.verify(secret), { ok: false, reason: 'revoked', id: made.id });
        // Presented again after its revocation: one auth:refused row under its id, not one a use.
        assert.equal((await tokens.verify(secret, 'GET /v1/status')).ok, false);
        const refused = await store.audit.list({ token: made.id });
        assert.deepEqual(
          refused.map((row) => [row.type, row.detail['route'], row.token]),
          [['auth:refused', 'a request', made.id]],
          'at most one row a minute per token',
        );
        assert.match(String(refused[0]?.detail['reason']), /^the token is revoked; presented again/);
      } finally {
        await store.close();
      }
    });
  });
}
