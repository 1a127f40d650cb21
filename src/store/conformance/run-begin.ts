/**
 * runs.begin (run-store.ts): a run's job start, agent session and claim in one commit, each write
 * with its guard and its ledger row; a refused start writes nothing, a refused or failed claim
 * leaves the start and the session, and is returned.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskStateError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const AGENT = { kind: 'agent', host: 'box-1', pid: 7, name: 'job 1' } as const;

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
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'd' });
        assert.ok(begun.ok && begun.claim instanceof TaskStateError);
        assert.equal(begun.claim.code, 'task_done');
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
      }));

    test('a claim that fails (an unknown task) is returned: the start and the session stand', () =>
      withFixture(harness, async ({ store }) => {
        const guard = await givenPlaced(store);
        const begun = await store.runs.begin({ job: guard, session: AGENT, key: 'nope' });
        assert.ok(begun.ok && begun.claim instanceof Error && !(begun.claim instanceof TaskStateError));
        assert.match(begun.claim.message, /nope/);
        assert.equal((await store.jobs.get(guard.id))?.status, 'running');
        assert.equal((await store.sessions.get(begun.session.id))?.state, 'live');
        assert.equal(await store.claims.current('k'), null);
      }));
  });
}
