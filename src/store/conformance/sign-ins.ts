/**
 * Dashboard sign-ins' tokens (token-store.ts `loginOf`; decision 0012, amendment "The sign-in
 * cookie"): made from a token presented at `POST /login`, never outliving it, opening nothing once
 * it is revoked or expired, on the database clock.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, withFixture, type Harness } from './harness.js';

const HOUR = 3_600_000;

export function exerciseSignIns(harness: Harness): void {
  describe("dashboard sign-ins' tokens", () => {
    test('a sign-in keeps the token it was made from, is listed and audited so, and ends with it', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const presented = await store.tokens.create({ scope: 'agent', session: session.id, name: 'bot' });
        const made = await store.tokens.create({
          scope: 'agent',
          session: session.id,
          ttlMs: 12 * HOUR,
          loginOf: presented.token.id,
          actor: `token ${presented.token.id}`,
        });
        assert.equal(made.token.loginOf, presented.token.id);
        assert.equal(presented.token.loginOf, null);
        assert.equal(made.token.expiresAt, made.token.createdAt + 12 * HOUR);
        assert.deepEqual(await store.tokens.verify(made.secret), { ok: true, token: made.token });
        assert.deepEqual(await store.tokens.get(made.token.id), made.token);
        const created = await store.audit.list({ type: 'token:created' });
        assert.equal(created.at(-1)?.detail['loginOf'], presented.token.id);
        assert.equal(created.at(0)?.detail['loginOf'], undefined, 'other tokens name none');
        assert.equal(await store.tokens.revoke({ id: presented.token.id, actor: 'ann@box' }), true);
        assert.deepEqual(await store.tokens.verify(made.secret), {
          ok: false,
          reason: 'revoked',
          id: made.token.id,
        });
        assert.deepEqual(await store.tokens.list(), [], 'nor is it listed as one that opens');
        assert.equal((await store.tokens.list({ all: true })).length, 2);
      }));

    test('a sign-in never outlives the token it was made from, and expires on the database clock', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const short = await store.tokens.create({ scope: 'viewer', ttlMs: HOUR });
        const lasting = await store.tokens.create({ scope: 'operator' });
        const ofShort = await store.tokens.create({
          scope: 'viewer',
          ttlMs: 12 * HOUR,
          loginOf: short.token.id,
        });
        const ofLasting = await store.tokens.create({
          scope: 'operator',
          ttlMs: 12 * HOUR,
          loginOf: lasting.token.id,
        });
        assert.equal(ofShort.token.expiresAt, short.token.expiresAt, 'the sooner of the two');
        assert.equal(ofLasting.token.expiresAt, ofLasting.token.createdAt + 12 * HOUR);
        await moveClock(HOUR + 1_000);
        assert.deepEqual(await store.tokens.verify(ofShort.secret), {
          ok: false,
          reason: 'expired',
          id: ofShort.token.id,
        });
        assert.equal((await store.tokens.verify(ofLasting.secret)).ok, true);
        await moveClock(11 * HOUR);
        assert.deepEqual(await store.tokens.verify(ofLasting.secret), {
          ok: false,
          reason: 'expired',
          id: ofLasting.token.id,
        });
        assert.equal(
          (await store.tokens.verify(lasting.secret)).ok,
          true,
          'the token it was made from lasts',
        );
        assert.deepEqual(
          (await store.tokens.list()).map((token) => token.id),
          [lasting.token.id],
        );
      }));
  });
}
