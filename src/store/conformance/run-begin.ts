/**
 * runs.begin (run-store.ts): a run's job start, agent session and claim in one commit, each write
 * with its guard and its ledger row; a refused start writes nothing, a refused or failed claim
 * leaves the start and the session, and is returned. The agent's token, asked for, is made with
 * a granted claim only, bound to the session and the run. runs.placeAndBegin: the same with the
 * job's placement first, in the same commit; not placed, nothing written.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskStateError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const AGENT = { kind: 'agent', host: 'box-1', pid: 7, name: 'job 1' } as const;
const TOKEN = { name: 'job 1' } as const;

/** A job placed on box-1 (its runner's session), as a run finds it. */
async function givenPlaced(store: Store, key = 'k'): Promise<{ id: number; session: number; epoch: number }> {
  const { session } = await givenHost(store);
  const term = await givenLeader(store);
  const { job } = await store.jobs.enqueue({ key });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
  assert.ok(placed.ok);
  return { id: job.id, session: session.id, epoch: placed.job.epoch };
}

async function agentSessions(store: Store): Promise<number> {
  return (await store.sessions.list()).filter((session) => session.kind === 'agent').length;
}

export function exerciseRunBegin(harness: Harness): void {
  describe('runs.begin', () => {
    test('starts the job, makes the agent session and grants it the claim, each with its ledger row', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'k' });
        assert.ok(begun.ok);
        assert.equal(begun.job.status, 'running');
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
        assert.ok(!(begun.claim instanceof Error) && begun.claim.ok && begun.claim.granted);
        assert.equal(begun.claim.claim.session, begun.session.id);
        assert.equal((await store.claims.current('k'))?.session, begun.session.id);
        const types = (await store.audit.list()).map((entry) => entry.type);
        for (const type of ['job:started', 'claim:granted'])
          assert.equal(types.filter((seen) => seen === type).length, 1, type);
        const started = (await store.audit.list()).filter((entry) => entry.type === 'session:started');
        assert.ok(started.some((entry) => entry.session === begun.session.id));
      }));

    test('a stale start is refused and writes nothing: no session, no claim', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const begun = await store.runs.begin({
          job: { ...guard, epoch: guard.epoch + 1 },
          session: AGENT,
          key: 'k',
        });
        assert.equal(begun.ok, false);
        assert.ok(!begun.ok && begun.start.reason === 'lost' && begun.start.job?.status === 'claimed');
        assert.equal(await agentSessions(store), 0);
        assert.equal(await store.claims.current('k'), null);
        const types = (await store.audit.list()).map((entry) => entry.type);
        assert.ok(!types.includes('job:started') && !types.includes('claim:granted'));
      }));

    test('a task held by another session: started, the session made, the claim answered held', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const other = await store.sessions.start({ kind: 'human', host: 'elsewhere', pid: 9 });
        assert.ok((await store.claims.acquire({ key: 'k', session: other.id })).ok);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'k' });
        assert.ok(begun.ok && !(begun.claim instanceof Error));
        assert.ok(
          !begun.claim.ok && begun.claim.reason === 'held' && begun.claim.holder.session === other.id,
        );
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
      }));

    test('a task no longer open: started, the session made, the refusal returned', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        await store.tasks.add({ key: 'd' });
        const human = await store.sessions.start({ kind: 'human', host: 'elsewhere', pid: 9 });
        const held = await store.claims.acquire({ key: 'd', session: human.id });
        assert.ok(held.ok);
        await store.claims.release({ key: 'd', session: human.id, epoch: held.claim.epoch, outcome: 'done' });
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'd', token: TOKEN });
        assert.ok(begun.ok && begun.claim instanceof TaskStateError && begun.token === null);
        assert.equal(begun.claim.code, 'task_done');
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
      }));

    test('a claim that fails (an unknown task) is returned: the start and the session stand', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'nope', token: TOKEN });
        assert.ok(begun.ok && begun.claim instanceof Error && !(begun.claim instanceof TaskStateError));
        assert.equal(begun.token, null);
        assert.deepEqual(await store.tokens.list({ all: true }), []);
        assert.match(begun.claim.message, /nope/);
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
        assert.equal(await store.claims.current('k'), null);
      }));
    test('asked for a token: made in the same begin, bound to the session and the run, with its ledger row', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'k', token: TOKEN });
        assert.ok(begun.ok && !(begun.claim instanceof Error) && begun.claim.ok && begun.token !== null);
        const { token, secret } = begun.token;
        assert.deepEqual(
          [token.scope, token.session, token.name, token.task, token.expiresAt, token.revokedAt],
          ['agent', begun.session.id, 'job 1', 'k', null, null],
        );
        assert.deepEqual(await store.tokens.list(), [token]);
        const checked = await store.tokens.verify(secret);
        assert.ok(checked.ok && checked.token.id === token.id);
        const ledger = await store.audit.list();
        const types = ledger.map((entry) => entry.type);
        assert.ok(types.indexOf('token:created') > types.indexOf('claim:granted'), types.join(', '));
        const created = ledger.find((entry) => entry.type === 'token:created');
        assert.deepEqual(created?.detail, {
          id: token.id,
          scope: 'agent',
          session: begun.session.id,
          host: null,
          name: 'job 1',
          expiresAt: null,
        });
        // Bound to the run: once its claim is released, the token opens nothing.
        const epoch = begun.claim.claim.epoch;
        await store.claims.release({ key: 'k', session: begun.session.id, epoch, outcome: 'done' });
        assert.deepEqual(await store.tokens.verify(secret), { ok: false, reason: 'ended' });
      }));

    test('a token asked for is not made without the claim: a stale start, a task held', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const stale = await store.runs.begin({
          job: { ...guard, epoch: guard.epoch + 1 },
          session: AGENT,
          key: 'k',
          token: TOKEN,
        });
        assert.equal(stale.ok, false);
        const other = await store.sessions.start({ kind: 'human', host: 'elsewhere', pid: 9 });
        assert.ok((await store.claims.acquire({ key: 'k', session: other.id })).ok);
        const held = await store.runs.begin({ job: guard, session: AGENT, key: 'k', token: TOKEN });
        assert.ok(held.ok && !(held.claim instanceof Error) && !held.claim.ok && held.token === null);
        assert.deepEqual(await store.tokens.list({ all: true }), []);
        assert.ok(!(await store.audit.list()).some((entry) => entry.type === 'token:created'));
      }));

    test('a claim taken over from a holder past its TTL gets the token asked for, bound to the run', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const guard = await givenPlaced(store);
        const gone = await store.sessions.start({ kind: 'human', host: 'h', pid: 1, ttlMs: 60_000 });
        assert.ok((await store.claims.acquire({ key: 'k', session: gone.id })).ok);
        await moveClock(61_000);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'k', token: TOKEN });
        assert.ok(begun.ok && !(begun.claim instanceof Error) && begun.claim.ok && begun.claim.granted);
        assert.equal(begun.claim.claim.epoch, 2);
        assert.ok(begun.token !== null);
        assert.equal(begun.token.token.session, begun.session.id);
        assert.deepEqual(await store.tokens.list(), [begun.token.token]);
        const created = (await store.audit.list()).filter((entry) => entry.type === 'token:created');
        assert.deepEqual(
          created.map((entry) => entry.detail['id']),
          [begun.token.token.id],
        );
      }));
  });

  describe('runs.placeAndBegin', () => {
    /** box-1 served, a leader's term, and job `k` queued: what a pass finds before it places. */
    async function givenQueued(store: Store) {
      const { session } = await givenHost(store);
      const term = await givenLeader(store);
      const { job } = await store.jobs.enqueue({ key: 'k' });
      const ask = {
        term,
        id: job.id,
        epoch: job.epoch,
        host: 'box-1',
        runner: session.id,
        session: AGENT,
        key: 'k',
      };
      return { runner: session.id, job, ask };
    }

    test('places and starts the job, makes the session, grants the claim and the token, in ledger order', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, job, ask } = await givenQueued(store);
        const begun = await store.runs.placeAndBegin({ ...ask, token: TOKEN });
        assert.ok(begun.placed && !(begun.claim instanceof Error) && begun.claim.ok && begun.claim.granted);
        const row = await store.jobs.get(job.id);
        assert.deepEqual(
          [row?.status, row?.host, row?.session, row?.epoch, row?.attempt],
          ['running', 'box-1', runner, job.epoch + 1, 1],
        );
        assert.equal(begun.job.epoch, job.epoch + 1);
        assert.equal((await store.claims.current('k'))?.session, begun.session.id);
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
        assert.ok(begun.token !== null && begun.token.token.session === begun.session.id);
        const types = (await store.audit.list()).map((entry) => entry.type);
        assert.deepEqual(types.slice(types.indexOf('job:placed')), [
          'job:placed',
          'job:started',
          'session:started',
          'claim:granted',
          'token:created',
        ]);
        const placed = (await store.audit.list({ jobId: job.id, type: 'job:placed' }))[0];
        assert.deepEqual(placed?.detail, { host: 'box-1', term: ask.term.term, attempt: 1 });
      }));

    test('not placed, nothing written: a stale term, another epoch or host, not its runner, a gated task', () =>
      withFixture(harness, async ({ store }) => {
        const { job, ask } = await givenQueued(store);
        const before = (await store.audit.list()).length;
        const stale = { ...ask.term, term: ask.term.term + 1 };
        assert.deepEqual(await store.runs.placeAndBegin({ ...ask, term: stale }), { placed: false });
        assert.deepEqual(await store.runs.placeAndBegin({ ...ask, epoch: job.epoch + 1 }), { placed: false });
        assert.deepEqual(await store.runs.placeAndBegin({ ...ask, host: 'box-2' }), { placed: false });
        // A live session that is not box-1's runner (a runner whose host was taken over meanwhile).
        const other = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 8 });
        assert.deepEqual(await store.runs.placeAndBegin({ ...ask, runner: other.id }), { placed: false });
        assert.equal((await store.audit.list()).length, before + 1, 'the four tries wrote nothing');
        await store.lifecycle.gate({ key: 'k', gate: 'design', by: { name: 'alice@box' } });
        const gatedAt = (await store.audit.list()).length;
        assert.deepEqual(await store.runs.placeAndBegin(ask), { placed: false });
        assert.equal((await store.audit.list()).length, gatedAt, 'the gated try wrote nothing');
        assert.equal((await store.jobs.get(job.id))?.status, 'queued');
        assert.equal(await agentSessions(store), 0);
        assert.equal(await store.claims.current('k'), null);
        const taken = await store.dispatch.place({ id: job.id, host: 'box-1', term: ask.term });
        assert.ok(!taken.ok && taken.reason === 'gated', 'the usual placement says why');
      }));

    test('a task held by another session: placed and started, the session made, the claim answered held', () =>
      withFixture(harness, async ({ store }) => {
        const { job, ask } = await givenQueued(store);
        const other = await store.sessions.start({ kind: 'human', host: 'elsewhere', pid: 9 });
        assert.ok((await store.claims.acquire({ key: 'k', session: other.id })).ok);
        const begun = await store.runs.placeAndBegin({ ...ask, token: TOKEN });
        assert.ok(begun.placed && !(begun.claim instanceof Error) && !begun.claim.ok);
        assert.equal(begun.claim.reason, 'held');
        assert.equal(begun.token, null);
        assert.equal((await store.jobs.get(job.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
      }));
  });
}
