import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Token } from '../core/token.js';
import { openStore } from '../store/open.js';
import { bothEngines } from '../../test/support/databases.js';
import { Coordinator } from './coordinator.js';
import { TokenCache } from './token-cache.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '../store/store.js';
import { rawSql } from '../../test/support/raw-sql.js';
import { mintRunToken } from '../../test/support/run-token.js';
import { RefusalCap } from './refusal-cap.js';
import { Tokens } from './tokens.js';

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
  revokedBy: null,
  loginOf: null,
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
        assert.deepEqual(await tokens.verify(secret), {
          ok: false,
          reason: 'revoked',
          id: made.id,
          byPerson: true,
        });
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

    test("a run's token revoked at its run's end and presented again: ended, and no row", async () => {
      const store = await openStore(await db.fresh());
      try {
        const { runner, agent, job, made } = await mintRunToken(store);
        assert.ok(
          (await store.jobs.finish({ id: job.id, session: runner.id, epoch: job.epoch, status: 'done' })).ok,
        );
        await store.tokens.revoke({ id: made.token.id }); // as the runner does (agent-token.ts close)
        const tokens = new Coordinator(store).tokens;
        assert.deepEqual(await tokens.verify(made.secret), { ok: false, reason: 'ended' });
        await store.sessions.end(agent.id);
        assert.deepEqual(await tokens.verify(made.secret), { ok: false, reason: 'ended' });
        assert.deepEqual(await store.audit.list({ type: 'auth:refused' }), []);
      } finally {
        await store.close();
      }
    });

    test('a flood of expired tokens writes at most the cap and one summary row', async () => {
      const store = await openStore(await db.fresh());
      try {
        const tokens = new Tokens(store, { dead: new RefusalCap(5, 4_000), forbidden: new RefusalCap() });
        // Expired, not revoked: a token a person revoked (any but a run's) has its first written past the cap.
        const secrets: string[] = [];
        for (let i = 0; i < 8; i += 1)
          secrets.push((await store.tokens.create({ scope: 'viewer', ttlMs: 1 })).secret);
        await sleep(20);
        const start = Date.now(); // the window starts with the first use: 8 uses well within its 4 s
        for (const secret of secrets) assert.equal((await tokens.verify(secret)).ok, false);
        assert.ok(Date.now() - start < 4_000, 'the uses took longer than the window');
        assert.equal((await store.audit.list({ type: 'auth:refused' })).length, 5, 'the cap');
        await sleep(4_000 - (Date.now() - start)); // the window ends a little later: its summary then
        let rows = await store.audit.list({ type: 'auth:refused' });
        for (let waited = 0; rows.length < 6 && waited < 3_000; waited += 100) {
          await sleep(100);
          rows = await store.audit.list({ type: 'auth:refused' });
        }
        assert.equal(rows.length, 6, 'the cap and the summary');
        assert.match(String(rows[5]?.detail['reason']), /^3 more uses of revoked or expired tokens between /);
        assert.deepEqual([rows[5]?.token, rows[5]?.detail['token']], [null, '*'], 'credited to no token');
        assert.equal((await tokens.verify(secrets[7] ?? '')).ok, false);
        assert.equal(
          (await store.audit.list({ type: 'auth:refused' })).length,
          7,
          'a new window writes again',
        );
      } finally {
        await store.close();
      }
    });

    test('past the dead-token cap, a token a person revoked still has its first refusal written', async () => {
      const store = await openStore(await db.fresh());
      try {
        const tokens = new Tokens(store, { dead: new RefusalCap(2, 60_000), forbidden: new RefusalCap() });
        const expired = [];
        for (let i = 0; i < 3; i += 1) expired.push(await store.tokens.create({ scope: 'viewer', ttlMs: 1 }));
        const person = await store.tokens.create({ scope: 'viewer' });
        await store.tokens.revoke({ id: person.token.id, actor: 'ann@box' });
        await sleep(20);
        for (const made of [...expired, person, person])
          assert.equal((await tokens.verify(made.secret)).ok, false);
        const rows = await store.audit.list({ type: 'auth:refused' });
        const written = [expired[0]?.token.id, expired[1]?.token.id, person.token.id];
        assert.deepEqual(
          rows.map((row) => row.token),
          written,
          'the cap of 2, then the revoked token',
        );
      } finally {
        await store.close();
      }
    });

    test("a token's first refusal row that failed does not count as its first", async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const sql = await rawSql(db, url);
      try {
        const tokens = new Tokens(store, {
          dead: new RefusalCap(),
          forbidden: new RefusalCap(1, 60_000, true),
        });
        const { token } = await store.tokens.create({ scope: 'viewer' });
        const refusal = (route: string) => ({
          token: token.id,
          route,
          target: 'a task',
          reason: 'beyond viewer',
        });
        await failRefusalRows(db.engine, sql);
        await tokens.refused(refusal('POST /v1/a')); // the limit's one row, not written
        await sql.exec(
          db.engine === 'sqlite'
            ? 'DROP TRIGGER fault_refused'
            : 'DROP TRIGGER fault_refused ON audit_events',
        );
        await tokens.refused(refusal('POST /v1/b'));
        const rows = await store.audit.list({ type: 'auth:refused' });
        assert.deepEqual(
          rows.map((row) => [row.token, row.detail['route']]),
          [[token.id, 'POST /v1/b']],
          'written past the limit as its first',
        );
      } finally {
        await sql.close();
        await store.close();
      }
    });

    test('a refusal row the database will not write: 401 all the same, and the next use tries again', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const sql = await rawSql(db, url);
      try {
        const tokens = new Tokens(store, { dead: new RefusalCap(), forbidden: new RefusalCap() });
        const [secret] = await revokedTokens(store, 1);
        assert.ok(secret !== undefined);
        await failRefusalRows(db.engine, sql);
        assert.deepEqual((await tokens.verify(secret)).ok, false, 'refused, not thrown');
        assert.deepEqual(await store.audit.list({ type: 'auth:refused' }), []);
        await sql.exec(
          db.engine === 'sqlite'
            ? 'DROP TRIGGER fault_refused'
            : 'DROP TRIGGER fault_refused ON audit_events',
        );
        assert.equal((await tokens.verify(secret)).ok, false);
        assert.equal((await store.audit.list({ type: 'auth:refused' })).length, 1, 'written on the next use');
      } finally {
        await sql.close();
        await store.close();
      }
    });
  });
}

/** `count` viewer tokens, made and revoked: their secrets. */
async function revokedTokens(store: Store, count: number): Promise<string[]> {
  const secrets: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const made = await store.tokens.create({ scope: 'viewer' });
    await store.tokens.revoke({ id: made.token.id });
    secrets.push(made.secret);
  }
  return secrets;
}

/** A trigger failing every `auth:refused` row's INSERT (dropped by name `fault_refused`). */
async function failRefusalRows(engine: string, sql: { exec(text: string): Promise<unknown> }): Promise<void> {
  if (engine === 'sqlite') {
    await sql.exec(`CREATE TRIGGER fault_refused BEFORE INSERT ON audit_events WHEN NEW.type = 'auth:refused'
      BEGIN SELECT RAISE(ABORT, 'injected fault: the refusal row'); END`);
  } else {
    await sql.exec(`CREATE FUNCTION fault_refused() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected fault: the refusal row'; END $$`);
    await sql.exec(`CREATE TRIGGER fault_refused BEFORE INSERT ON audit_events FOR EACH ROW
      WHEN (NEW.type = 'auth:refused') EXECUTE FUNCTION fault_refused()`);
  }
}
