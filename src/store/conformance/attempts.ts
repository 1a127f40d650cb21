/**
 * Attempts that never started an agent do not count (issue 14, item 7): a job placed on a host
 * that died before its runner spawned anything is given its attempt back, so crashes of hosts
 * cannot use up a job's attempts; an attempt whose agent ran counts as before, unless its own
 * runner gave the job back because it was shutting down gracefully (the agent did not fail).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';
import type { Store } from '../store.js';

const POLICY = { backoffBaseMs: 1, backoffMaxMs: 1 };

/** A job on its only attempt, placed on box-1 and running there with an agent attached. */
async function givenRunningOnLastAttempt(store: Store) {
  const { session } = await givenHost(store);
  const term = await givenLeader(store);
  const { job } = await store.jobs.enqueue({ key: 'k', attemptMax: 1 });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
  assert.ok(placed.ok);
  const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
  await store.jobs.start(guard);
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
  await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 3 });
  return { session, job, guard };
}

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
        const { session, job } = await givenRunningOnLastAttempt(store);
        await store.sessions.end(session.id);
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.jobsFailed, [job.id]);
        assert.match((await store.jobs.get(job.id))?.reason ?? '', /^attempts exhausted/);
      }));

    test('a runner shutting down gives its running job back at once, its attempt not counted', () =>
      withFixture(harness, async ({ store }) => {
        const { job, guard } = await givenRunningOnLastAttempt(store);
        const shutdown = {
          reason: 'runner shut down',
          policy: { backoffBaseMs: 60_000, backoffMaxMs: 60_000 },
        };
        const stale = await store.dispatch.requeue({ ...guard, epoch: 2, ...shutdown, attemptCounts: false });
        assert.equal(stale.ok, false, 'fenced by the epoch like any requeue');
        const back = await store.dispatch.requeue({ ...guard, ...shutdown, attemptCounts: false });
        assert.ok(back.ok);
        assert.equal(back.job.status, 'queued', 'its last attempt, yet not failed');
        assert.equal(back.job.attempt, 0);
        assert.match(back.job.reason ?? '', /^requeued: runner shut down; the agent did not fail/);
        assert.ok(back.job.runAfter <= (await store.now()), 'no backoff');
        const [requeued] = await store.audit.list({ jobId: job.id, type: 'job:requeued' });
        assert.equal(requeued?.detail['attempt'], 0);
        assert.match(String(requeued?.detail['reason']), /^runner shut down; .*the attempt does not count$/);
      }));

    test("a pull worker's started job counts its attempt when its session dies; one only claimed does not", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { job: started } = await store.jobs.enqueue({ key: 'started', attemptMax: 1 });
        const { job: claimed } = await store.jobs.enqueue({ key: 'claimed', attemptMax: 1 });
        const worker = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 5 });
        assert.equal((await store.jobs.claimNext({ session: worker.id, start: true }))?.id, started.id);
        assert.equal((await store.jobs.claimNext({ session: worker.id }))?.id, claimed.id);
        await moveClock(61_000);
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.sessions, [worker.id], 'its heartbeats stopped');
        assert.deepEqual(report.jobsFailed, [started.id], 'the worker ran it: its one attempt is used');
        assert.deepEqual(report.jobsRequeued, [claimed.id]);
        assert.match((await store.jobs.get(started.id))?.reason ?? '', /^attempts exhausted: session \d+/);
        const back = await store.jobs.get(claimed.id);
        assert.equal(back?.attempt, 0, 'never started: the attempt is not counted');
      }));

    test('ending a session gives back its pull jobs at once, fenced, their attempts not counted', () =>
      withFixture(harness, async ({ store }) => {
        const { job: started } = await store.jobs.enqueue({ key: 'started', attemptMax: 1 });
        const { job: claimed } = await store.jobs.enqueue({ key: 'claimed', attemptMax: 1 });
        const { job: batched } = await store.jobs.enqueue({ key: 'batched', attemptMax: 1 });
        const worker = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 5 });
        assert.equal((await store.jobs.claimNext({ session: worker.id, start: true }))?.id, started.id);
        assert.equal((await store.jobs.claimNext({ session: worker.id }))?.id, claimed.id);
        const { taken } = await store.jobs.batch({ session: worker.id, take: 1, leaseMs: 3_600_000 });
        assert.deepEqual(
          taken.map((job) => job.id),
          [batched.id],
        );
        const ids = [started.id, claimed.id, batched.id];
        assert.deepEqual(
          await store.sessions.end(worker.id),
          { ended: true, jobsRequeued: ids },
          'the answer names every job given back, none failed though each was on its last attempt',
        );
        assert.deepEqual(
          await store.sessions.end(worker.id),
          { ended: false, jobsRequeued: [] },
          'once only',
        );
        const now = await store.now();
        for (const id of ids) {
          const back = await store.jobs.get(id);
          assert.equal(back?.status, 'queued', `job ${id} is queued again`);
          assert.equal(back?.attempt, 0, 'its last attempt, given back');
          assert.ok((back?.runAfter ?? Infinity) <= now, 'no backoff');
          assert.match(back?.reason ?? '', /^requeued: session \d+ ended; the agent did not fail/);
          const late = await store.jobs.finish({ id, session: worker.id, epoch: 1, status: 'done' });
          assert.equal(late.ok, false, 'the old holder is fenced');
        }
        const requeued = await store.audit.list({ type: 'job:requeued' });
        assert.deepEqual(
          requeued.map((entry) => [entry.jobId, entry.session, entry.epoch, entry.detail['attempt']]),
          ids.map((id) => [id, worker.id, 1, 0]),
        );
        const other = await store.sessions.start({ kind: 'agent', host: 'box-2', pid: 6 });
        const again = await store.jobs.claimNext({ session: other.id, start: true });
        assert.deepEqual([again?.id, again?.epoch, again?.attempt], [started.id, 2, 1], 'at once, fenced');
        const late = await store.jobs.finish({
          id: started.id,
          session: worker.id,
          epoch: 1,
          status: 'done',
        });
        assert.equal(late.ok, false);
      }));

    test('the sweep gives back a job whose lease passed while its session lives on, counting the attempt', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { job } = await store.jobs.enqueue({ key: 'k', attemptMax: 2 });
        const worker = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 5 });
        const sweep = () => store.recovery.rescueStale({ staleAfterMs: 600_000, policy: POLICY });
        for (let round = 1; round <= 2; round++) {
          const { taken } = await store.jobs.batch({ session: worker.id, take: 1, leaseMs: 60_000 });
          assert.deepEqual(
            taken.map((job1) => [job1.id, job1.epoch, job1.attempt]),
            [[job.id, round, round]],
          );
          assert.deepEqual((await sweep()).jobsRequeued, [], 'within its lease the job stays');
          await moveClock(61_000);
          await store.sessions.heartbeat({ session: worker.id });
          const report = await sweep();
          assert.deepEqual(report.sessions, [], 'its session lives on');
          const after = await store.jobs.get(job.id);
          if (round === 1) {
            assert.deepEqual(report.jobsRequeued, [job.id]);
            assert.equal(after?.status, 'queued');
            assert.equal(after?.reason, 'requeued: lease expired');
            const late = await store.jobs.finish({
              id: job.id,
              session: worker.id,
              epoch: 1,
              status: 'done',
            });
            assert.equal(late.ok, false, 'the holder is fenced');
            await moveClock(1_000);
          } else {
            assert.deepEqual(report.jobsFailed, [job.id]);
            assert.equal(after?.reason, 'attempts exhausted: lease expired');
          }
        }
        const requeued = await store.audit.list({ jobId: job.id, type: 'job:requeued' });
        assert.deepEqual(
          requeued.map((entry) => [entry.session, entry.epoch, entry.detail]),
          [[worker.id, 1, { reason: 'lease expired', attempt: 1 }]],
        );
      }));
  });
}
