import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import { actingAs } from '../actor.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

/**
 * A runner (its session's TTL `runnerTtlMs`) running job k, its agent (TTL 60 s) holding k's claim,
 * and the agent's token bound to that run.
 */
async function givenRunToken(store: Store, runnerTtlMs: number) {
  const runner = await store.sessions.start({ kind: 'agent', host: 'host-a', pid: 1, ttlMs: runnerTtlMs });
  const agent = await store.sessions.start({ kind: 'agent', host: 'host-a', pid: 2, ttlMs: 60_000 });
  await store.jobs.enqueue({ key: 'k' });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  const claimed = await store.claims.acquire({ key: 'k', session: agent.id });
  assert.ok(job !== null && claimed.ok);
  const run = { jobId: job.id, jobEpoch: job.epoch, claimEpoch: claimed.claim.epoch };
  const { secret } = await store.tokens.create({ scope: 'agent', session: agent.id, run });
  return { runner, agent, secret };
}

export function exerciseTokens(harness: Harness): void {
  describe('API tokens', () => {
    test('a token opens by its secret, is listed without it, kept as a hash, and its creation is audited', () =>
      withFixture(harness, async ({ store, raw }) => {
        const session = await givenSession(store);
        const { token, secret } = await store.tokens.create({
          scope: 'agent',
          session: session.id,
          name: 'bot',
        });
        assert.match(secret, /^baton_[A-Za-z0-9_-]{43}$/);
        assert.deepEqual(
          [token.scope, token.session, token.host, token.name],
          ['agent', session.id, null, 'bot'],
        );
        const check = await store.tokens.verify(secret);
        assert.deepEqual(check, { ok: true, token });
        assert.deepEqual(await store.tokens.verify(`${secret}x`), { ok: false, reason: 'unknown' });
        assert.deepEqual(await store.tokens.list(), [token]);
        const rows = await raw.exec('SELECT * FROM tokens');
        assert.equal(rows.length, 1);
        assert.ok(!JSON.stringify(rows).includes(secret.slice(6)), 'the secret is not stored');
        const [created] = await store.audit.list({ type: 'token:created' });
        assert.deepEqual(created?.detail, {
          id: token.id,
          scope: 'agent',
          session: session.id,
          host: null,
          name: 'bot',
          expiresAt: null,
        });
      }));

    test('bindings must fit the scope, and an agent token binds only to a live session', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await assert.rejects(store.tokens.create({ scope: 'agent' }), InvalidInputError);
        await assert.rejects(
          store.tokens.create({ scope: 'viewer', session: session.id }),
          InvalidInputError,
        );
        await assert.rejects(store.tokens.create({ scope: 'host' }), InvalidInputError);
        await assert.rejects(store.tokens.create({ scope: 'operator', host: 'box' }), InvalidInputError);
        await assert.rejects(store.tokens.create({ scope: 'agent', session: 9999 }), NotFoundError);
        await store.sessions.end(session.id);
        await assert.rejects(store.tokens.create({ scope: 'agent', session: session.id }), FencedError);
        assert.deepEqual(await store.tokens.list({ all: true }), []);
        assert.deepEqual(await store.audit.list({ type: 'token:created' }), []);
        const host = await store.tokens.create({ scope: 'host', host: 'box-1' });
        assert.deepEqual([host.token.scope, host.token.session, host.token.host], ['host', null, 'box-1']);
      }));

    test('the list shows the tokens that may still open the API; all: every token; get reads one by id', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        // A second apart each: the list is oldest first, and tokens made in one ms order by their random ids.
        const revoked = (await store.tokens.create({ scope: 'operator', name: 'revoked' })).token;
        await moveClock(1_000);
        const expiring = (await store.tokens.create({ scope: 'viewer', name: 'expiring', ttlMs: 60_000 }))
          .token;
        await moveClock(1_000);
        const lasting = (await store.tokens.create({ scope: 'viewer', name: 'lasting', ttlMs: 3_600_000 }))
          .token;
        await moveClock(1_000);
        const forever = (await store.tokens.create({ scope: 'host', host: 'box-1' })).token;
        assert.equal(await store.tokens.revoke({ id: revoked.id }), true);
        const names = async (all?: boolean) =>
          (await store.tokens.list(all === undefined ? undefined : { all })).map(
            (token) => token.name ?? token.host,
          );
        assert.deepEqual(await names(), ['expiring', 'lasting', 'box-1'], 'the revoked one is left out');
        await moveClock(60_000);
        assert.deepEqual(await names(), ['lasting', 'box-1'], 'so is the expired one');
        assert.deepEqual(await names(false), ['lasting', 'box-1']);
        assert.deepEqual(await names(true), ['revoked', 'expiring', 'lasting', 'box-1'], 'all, oldest first');
        assert.deepEqual(await store.tokens.get(forever.id), forever);
        assert.deepEqual(await store.tokens.get(lasting.id), lasting);
        assert.equal((await store.tokens.get(revoked.id))?.revokedAt !== null, true);
        assert.equal((await store.tokens.get(expiring.id))?.id, expiring.id);
        assert.equal(await store.tokens.get('nope'), null);
      }));

    test('the list leaves out a run token whose run is over and an agent token whose session ended', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, agent, secret } = await givenRunToken(store, 60_000);
        const check = await store.tokens.verify(secret);
        assert.ok(check.ok);
        const ids = async (all?: boolean) => (await store.tokens.list({ all })).map((token) => token.id);
        assert.deepEqual(await ids(), [check.token.id]);
        // The run ends and nobody revokes its token (its runner was killed): it opens nothing.
        const [job] = await store.jobs.list({ status: ['running'] });
        assert.ok(job !== undefined);
        assert.ok(
          (await store.jobs.finish({ id: job.id, session: runner.id, epoch: job.epoch, status: 'done' })).ok,
        );
        assert.deepEqual(await store.tokens.verify(secret), { ok: false, reason: 'ended' });
        assert.deepEqual(await ids(), []);
        assert.deepEqual(await ids(true), [check.token.id]);
        const own = await store.tokens.create({ scope: 'agent', session: agent.id, name: 'own' });
        assert.deepEqual(await ids(), [own.token.id]);
        await store.sessions.end(agent.id);
        assert.deepEqual(await ids(), [], 'its session ended');
        assert.deepEqual((await ids(true)).sort(), [check.token.id, own.token.id].sort()); // made in one ms, maybe
      }));

    test('a revoked token opens nothing; revoking twice answers false; an unknown id is not found', () =>
      withFixture(harness, async ({ store }) => {
        const { token, secret } = await store.tokens.create({ scope: 'operator' });
        assert.equal(await store.tokens.revoke({ id: token.id }), true);
        assert.deepEqual(await store.tokens.verify(secret), {
          ok: false,
          reason: 'revoked',
          id: token.id,
          byPerson: true,
        });
        assert.equal(await store.tokens.revoke({ id: token.id }), false);
        await assert.rejects(store.tokens.revoke({ id: 'nope' }), NotFoundError);
        const [listed] = await store.tokens.list({ all: true });
        assert.ok(listed?.revokedAt !== null);
        const revoked = await store.audit.list({ type: 'token:revoked' });
        assert.deepEqual(
          revoked.map((entry) => entry.detail),
          [{ id: token.id }],
        );
      }));

    test("a session's token opens nothing once its session has ended, however it ended", () =>
      withFixture(harness, async ({ store }) => {
        const ended = await givenSession(store);
        const first = await store.tokens.create({ scope: 'agent', session: ended.id });
        assert.equal((await store.tokens.verify(first.secret)).ok, true);
        await store.sessions.end(ended.id);
        assert.deepEqual(await store.tokens.verify(first.secret), { ok: false, reason: 'ended' });
        const viewer = await store.tokens.create({ scope: 'viewer' });
        assert.equal(
          (await store.tokens.verify(viewer.secret)).ok,
          true,
          'a token bound to no session lives on',
        );
      }));

    test("a token a person revoked answers revoked after its session or run ended; the runner's, ended", () =>
      withFixture(harness, async ({ store }) => {
        // A leaked session token revoked by a person while its session lived, then the session ended.
        const session = await givenSession(store);
        const leaked = await store.tokens.create({ scope: 'agent', session: session.id });
        assert.equal(await store.tokens.revoke({ id: leaked.token.id, actor: 'ann@box' }), true);
        await store.sessions.end(session.id);
        const revoked = { ok: false, reason: 'revoked', id: leaked.token.id, byPerson: true };
        assert.deepEqual(await store.tokens.verify(leaked.secret), revoked);
        // Revoked before revoked_by was kept (no actor): no run's token, so no runner's: a person's.
        const older = await store.tokens.create({ scope: 'agent', session: (await givenSession(store)).id });
        assert.equal(await store.tokens.revoke({ id: older.token.id }), true);
        await store.sessions.end(older.token.session ?? 0);
        assert.deepEqual(await store.tokens.verify(older.secret), { ...revoked, id: older.token.id });
        // A run's token: one revoked by a person during the run, one by its runner (no actor) at its end.
        const { runner, agent, secret } = await givenRunToken(store, 60_000);
        const byPerson = (await store.tokens.list()).find((token) => token.session === agent.id);
        assert.ok(byPerson !== undefined);
        assert.equal(await store.tokens.revoke({ id: byPerson.id, actor: 'token 0123456789ab' }), true);
        const job = (await store.jobs.list({ key: 'k' }))[0];
        assert.ok(job !== undefined);
        const again = await store.tokens.create({
          scope: 'agent',
          session: agent.id,
          run: { jobId: job.id, jobEpoch: job.epoch, claimEpoch: 1 },
        });
        assert.equal(
          (await store.jobs.finish({ id: job.id, session: runner.id, epoch: job.epoch, status: 'done' })).ok,
          true,
        );
        assert.equal(await store.tokens.revoke({ id: again.token.id }), true); // as AgentReach.close does
        assert.deepEqual(await store.tokens.verify(secret), { ...revoked, id: byPerson.id });
        assert.deepEqual(await store.tokens.verify(again.secret), { ok: false, reason: 'ended' });
        await store.sessions.end(agent.id);
        assert.deepEqual(await store.tokens.verify(secret), { ...revoked, id: byPerson.id });
        assert.deepEqual(await store.tokens.verify(again.secret), { ok: false, reason: 'ended' });
      }));

    test("a run's token opens nothing once its claim or job attempt is over, though its session lives on", () =>
      withFixture(harness, async ({ store }) => {
        const runner = await givenSession(store);
        const agent = await givenSession(store);
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: runner.id, start: true });
        assert.ok(job !== null);
        const claimed = await store.claims.acquire({ key: 'k', session: agent.id });
        assert.ok(claimed.ok);
        const run = { jobId: job.id, jobEpoch: job.epoch, claimEpoch: claimed.claim.epoch };
        const first = await store.tokens.create({ scope: 'agent', session: agent.id, run });
        const stale = await store.tokens.create({
          scope: 'agent',
          session: agent.id,
          run: { ...run, jobEpoch: 99 },
        });
        assert.equal((await store.tokens.verify(first.secret)).ok, true);
        assert.deepEqual(await store.tokens.verify(stale.secret), { ok: false, reason: 'ended' });
        await store.claims.release({
          key: 'k',
          session: agent.id,
          epoch: run.claimEpoch,
          outcome: 'released',
        });
        assert.deepEqual(await store.tokens.verify(first.secret), { ok: false, reason: 'ended' });

        const again = await store.claims.acquire({ key: 'k', session: agent.id });
        assert.ok(again.ok);
        const second = await store.tokens.create({
          scope: 'agent',
          session: agent.id,
          run: { ...run, claimEpoch: again.claim.epoch },
        });
        assert.equal((await store.tokens.verify(second.secret)).ok, true);
        const guard = { id: job.id, session: runner.id, epoch: job.epoch };
        assert.equal((await store.jobs.finish({ ...guard, status: 'failed' })).ok, true);
        assert.deepEqual(await store.tokens.verify(second.secret), { ok: false, reason: 'ended' });
        assert.equal((await store.sessions.get(agent.id))?.state, 'live');
        const plain = await store.tokens.create({ scope: 'agent', session: agent.id });
        assert.equal((await store.tokens.verify(plain.secret)).ok, true, 'a token bound to no run lives on');
        await assert.rejects(store.tokens.create({ scope: 'viewer', run }), InvalidInputError);
      }));

    test("a run's token names its run's task where it is made, verified and listed; other tokens none", () =>
      withFixture(harness, async ({ store }) => {
        const { agent, secret } = await givenRunToken(store, 60_000);
        const plain = await store.tokens.create({ scope: 'agent', session: agent.id });
        assert.equal(plain.token.task, null);
        const check = await store.tokens.verify(secret);
        assert.ok(check.ok);
        assert.equal(check.token.task, 'k');
        const made = (await store.tokens.list()).find((token) => token.id === check.token.id);
        assert.equal(made?.task, 'k');
        const [job] = await store.jobs.list({ key: 'k' });
        assert.ok(job !== undefined);
        const again = await store.tokens.create({
          scope: 'agent',
          session: agent.id,
          run: { jobId: job.id, jobEpoch: job.epoch, claimEpoch: 1 },
        });
        assert.equal(again.token.task, 'k', 'create answers the task of the job it names');
        const viewer = await store.tokens.verify((await store.tokens.create({ scope: 'viewer' })).secret);
        assert.ok(viewer.ok);
        assert.equal(viewer.token.task, null);
      }));

    test("a run's token dies once its session passes its TTL on the database clock, before anyone ends it", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { agent, secret } = await givenRunToken(store, 600_000);
        await moveClock(30_000);
        assert.equal((await store.tokens.verify(secret)).ok, true);
        await moveClock(31_000);
        assert.deepEqual(await store.tokens.verify(secret), { ok: false, reason: 'ended' });
        assert.equal((await store.sessions.get(agent.id))?.state, 'live', 'nobody has ended it');
      }));

    test("a run's token dies once its runner passes its TTL, though the agent beats its own session", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { runner, agent, secret } = await givenRunToken(store, 60_000);
        for (const step of [30_000, 31_000]) {
          await moveClock(step);
          await store.sessions.heartbeat({ session: agent.id });
        }
        assert.deepEqual(await store.tokens.verify(secret), { ok: false, reason: 'ended' });
        assert.equal((await store.sessions.get(runner.id))?.state, 'live', 'nobody has rescued the runner');
        await store.sessions.heartbeat({ session: runner.id });
        assert.equal((await store.tokens.verify(secret)).ok, true, 'a runner heard from again revives it');
      }));

    test('a token expires on the database clock', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { token, secret } = await store.tokens.create({ scope: 'viewer', ttlMs: 60_000 });
        assert.equal(token.expiresAt, token.createdAt + 60_000);
        assert.equal((await store.tokens.verify(secret)).ok, true);
        await moveClock(61_000);
        assert.deepEqual(await store.tokens.verify(secret), { ok: false, reason: 'expired', id: token.id });
      }));

    test('every ledger row written while acting as a token records it, and rows written otherwise do not', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await actingAs('tok-a', async () => {
          await store.tasks.add({ key: 'k1' });
          await store.claims.acquire({ key: 'k1', session: session.id });
        });
        await store.tasks.add({ key: 'k2' });
        await Promise.all([
          actingAs('tok-b', () => store.tasks.add({ key: 'k3' })),
          store.tasks.add({ key: 'k4' }),
          actingAs('tok-c', () => store.jobs.enqueue({ key: 'k5' })),
        ]);
        const rows = await store.audit.list({});
        const byKey = (key: string): (string | null)[] =>
          rows
            .filter((entry) => entry.key === key && entry.type !== 'session:started')
            .map((entry) => entry.token);
        assert.deepEqual(byKey('k1'), ['tok-a', 'tok-a']);
        assert.deepEqual(byKey('k2'), [null]);
        assert.deepEqual(byKey('k3'), ['tok-b']);
        assert.deepEqual(byKey('k4'), [null]);
        assert.ok(byKey('k5').length > 0 && byKey('k5').every((token) => token === 'tok-c'));
        assert.equal(rows.find((entry) => entry.type === 'session:started')?.token, null);
      }));

    test('audit.list by token: the rows that token wrote, its refusals included, and no other', () =>
      withFixture(harness, async ({ store }) => {
        await actingAs('0123456789ab', async () => {
          await store.tasks.add({ key: 'k1' });
          await store.jobs.enqueue({ key: 'k1' });
        });
        await store.tasks.add({ key: 'k2' });
        await actingAs('ba9876543210', () => store.tasks.add({ key: 'k3' }));
        await actingAs('0123456789ab', () =>
          store.tokens.refused({ token: '0123456789ab', route: 'POST /v1/x', target: 'x', reason: 'r' }),
        );
        const rows = await store.audit.list({ token: '0123456789ab' });
        assert.deepEqual(
          rows.map((entry) => [entry.type, entry.key, entry.token]),
          [
            ['task:added', 'k1', '0123456789ab'],
            ['job:enqueued', 'k1', '0123456789ab'],
            ['auth:refused', null, '0123456789ab'],
          ],
        );
        const newest = await store.audit.list({ token: '0123456789ab', newestFirst: true, limit: 1 });
        assert.deepEqual(
          newest.map((entry) => entry.type),
          ['auth:refused'],
        );
        const [first] = rows;
        assert.deepEqual(
          (await store.audit.list({ token: '0123456789ab', afterId: first?.id })).map((entry) => entry.type),
          ['job:enqueued', 'auth:refused'],
        );
        assert.deepEqual(await store.audit.list({ token: 'ffffffffffff' }), []);
      }));

    test('a refusal is written as auth:refused with the token, route, target and reason', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.tokens.refused({
          token: 'tok-x',
          route: 'POST /v1/claims/k1/release',
          target: 'claim k1 of session 9',
          reason: 'bound to another session',
          key: 'k1',
          session: session.id,
        });
        const [row] = await store.audit.list({ type: 'auth:refused' });
        assert.equal(row?.key, 'k1');
        assert.equal(row?.session, session.id);
        assert.equal(row?.host, 'host-a');
        assert.deepEqual(row?.detail, {
          token: 'tok-x',
          route: 'POST /v1/claims/k1/release',
          target: 'claim k1 of session 9',
          reason: 'bound to another session',
        });
      }));
  });

  describe('the schema', () => {
    test('after opening, the database has every migration this code knows', () =>
      withFixture(harness, async ({ store }) => {
        const { applied, known } = await store.schema();
        assert.ok(known >= 14);
        assert.equal(applied, known);
      }));
  });
}
