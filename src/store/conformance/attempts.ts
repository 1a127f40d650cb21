/**
 * Attempts that never started an agent do not count (issue 14, item 7): a job placed on a host
 * that died before its runner spawned anything is given its attempt back, so crashes of hosts
 * cannot use up a job's attempts; an attempt whose agent ran counts as before.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 1, backoffMaxMs: 1 };

export function exerciseAttempts(harness: Harness): void {
  describe('attempts', () => {
    test('gives back the attempt of a placement whose host died before any agent started', () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'k', attemptMax: 1 });
        for (let crash = 1; crash <= 3; crash++) {
          const { session } = await givenHost(store, `box-${crash}`);
          const term = await givenLeader(store, `leader-${crash}`);
          const placed = await store.dispatch.place({ id: job.id, host: `box-${crash}`, term });
          assert.ok(placed.ok, `placement ${crash}`);
          assert.equal(placed.job.attempt, 1);
          if (crash === 3)
            await store.jobs.start({ id: job.id, session: session.id, epoch: placed.job.epoch });
          await store.sessions.end(session.id);
          const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
          assert.deepEqual(report.jobsRequeued, [job.id], `crash ${crash} requeues`);
          const after = await store.jobs.get(job.id);
          assert.equal(after?.status, 'queued');
          assert.equal(after?.attempt, 0, 'the attempt is not counted');
          assert.match(after?.reason ?? '', /no agent had started, so the attempt does not count/);
          await store.leases.resign({ name: 'dispatcher', holder: term.holder, term: term.term });
        }
      }));

    test("a job's start and its agent's session sent together take effect; a stale start alone is refused", () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term })).ok);
        // As a run sends them (daemon/run-start.ts); SQLite commits them together.
        const agent = { kind: 'agent', host: 'box-1', pid: 7 } as const;
        const [stale, fresh] = await Promise.all([
          store.jobs.start({ id: job.id, session: session.id, epoch: 2 }),
          store.sessions.start(agent),
        ]);
        assert.equal(stale.ok, false);
        assert.equal((await store.sessions.get(fresh.id))?.state, 'live');
        const [started, made] = await Promise.all([
          store.jobs.start({ id: job.id, session: session.id, epoch: 1 }),
          store.sessions.start(agent),
        ]);
        assert.ok(started.ok);
        assert.equal(started.job.status, 'running');
        assert.equal((await store.sessions.get(made.id))?.state, 'live');
        const types = (await store.audit.list({ jobId: job.id })).map((entry) => entry.type);
        assert.equal(types.filter((type) => type === 'job:started').length, 1);
      }));

    test('counts an attempt whose agent started, failing the job once they are used up', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k', attemptMax: 1 });
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(placed.ok);
        const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
        await store.jobs.start(guard);
        const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
        await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 3 });
        await store.sessions.end(session.id);
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.jobsFailed, [job.id]);
        assert.match((await store.jobs.get(job.id))?.reason ?? '', /^attempts exhausted/);
      }));
  });
}
