/**
 * Workspace locks as the dispatcher and recovery use them: taken with a placement in one step,
 * released in the same step as the run's end (finish, cancel, requeue), and recovered with the
 * session that held them (end, rescue). Also the dispatcher's skip of an unresolved job.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, sleep, withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };

/** A host, a leader and workspace `w`. */
async function givenCluster(store: Store) {
  const { session: runner } = await givenHost(store);
  const term = await givenLeader(store);
  await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
  return { runner, term };
}

async function lockEntries(store: Store, jobId?: number) {
  const entries = await store.audit.list(jobId === undefined ? { limit: 1000 } : { jobId });
  return entries.filter((entry) => entry.type.startsWith('lock:'));
}

export function exerciseWorkspaceDispatch(harness: Harness): void {
  describe('placement with a workspace lock', () => {
    test("places a job and locks its workspace for the host's runner in one step, audited in that order", () =>
      withFixture(harness, async ({ store }) => {
        const { runner, term } = await givenCluster(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const result = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(result.ok);
        assert.equal(result.job.status, 'claimed');
        assert.equal(result.job.session, runner.id);
        const lock = await store.workspaceLocks.current('w');
        assert.ok(lock !== null);
        const expected = { workspace: 'w', session: runner.id, jobId: job.id, epoch: 1 };
        assert.deepEqual({ ...lock, acquiredAt: 0 }, { ...expected, acquiredAt: 0 });
        assert.equal(lock.acquiredAt, result.job.claimedAt);
        const entries = await store.audit.list({ jobId: job.id });
        assert.deepEqual(
          entries.map((entry) => [entry.type, entry.key, entry.session, entry.host, entry.epoch]),
          [
            ['job:enqueued', 'k', null, null, null],
            ['job:placed', 'k', runner.id, 'box-1', 1],
            ['lock:acquired', 'k', runner.id, 'box-1', 1],
          ],
        );
        assert.deepEqual(entries[2]?.detail, { workspace: 'w' });
      }));

    test('answers workspace_held with the holding job and changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, term } = await givenCluster(store);
        const { job: first } = await store.jobs.enqueue({ key: 'a' });
        const { job: second } = await store.jobs.enqueue({ key: 'b' });
        const placed = await store.dispatch.place({ id: first.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(placed.ok);
        const entries = (await store.audit.list()).length;
        const result = await store.dispatch.place({ id: second.id, host: 'box-1', term, workspace: 'w' });
        const since = placed.job.claimedAt ?? 0;
        assert.deepEqual(result, {
          ok: false,
          reason: 'workspace_held',
          holder: { session: runner.id, host: 'box-1', jobId: first.id, since, epoch: 1 },
        });
        assert.deepEqual(await store.jobs.get(second.id), second);
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('answers workspace_held for a lock taken outside any job, naming its session', () =>
      withFixture(harness, async ({ store }) => {
        const { term } = await givenCluster(store);
        const human = await givenSession(store, 'laptop', 'human');
        await store.workspaceLocks.acquire({ workspace: 'w', session: human.id });
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const result = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(!result.ok && result.reason === 'workspace_held');
        assert.equal(result.holder.session, human.id);
        assert.equal(result.holder.host, 'laptop');
        assert.equal(result.holder.jobId, null);
      }));

    test('places without reading or taking a lock when no workspace is given, even while it is held', () =>
      withFixture(harness, async ({ store }) => {
        const { term } = await givenCluster(store);
        const { job: coding } = await store.jobs.enqueue({ key: 'coding' });
        const { job: cognitive } = await store.jobs.enqueue({ key: 'cognitive' });
        assert.ok((await store.dispatch.place({ id: coding.id, host: 'box-1', term, workspace: 'w' })).ok);
        const result = await store.dispatch.place({ id: cognitive.id, host: 'box-1', term });
        assert.ok(result.ok);
        assert.equal((await store.workspaceLocks.current('w'))?.jobId, coding.id);
        assert.deepEqual(await lockEntries(store, cognitive.id), []);
      }));

    test('takes no lock when the placement is fenced or lost, and refuses an unknown workspace', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await givenHost(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const old = await givenLeader(store, 'leader-a', 80);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        await moveClock(120);
        const fenced = await store.dispatch.place({ id: job.id, host: 'box-1', term: old, workspace: 'w' });
        assert.deepEqual(fenced, { ok: false, reason: 'fenced' });
        const term = await givenLeader(store, 'leader-b');
        await assert.rejects(
          store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'nope' }),
          NotFoundError,
        );
        await store.jobs.cancel({ id: job.id });
        const lost = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(!lost.ok && lost.reason === 'lost');
        assert.equal(lost.job?.status, 'cancelled');
        const { job: other } = await store.jobs.enqueue({ key: 'other' });
        const noHost = await store.dispatch.place({ id: other.id, host: 'box-9', term, workspace: 'w' });
        assert.ok(!noHost.ok && noHost.reason === 'lost');
        assert.equal(await store.workspaceLocks.current('w'), null);
        assert.deepEqual(await lockEntries(store), []);
      }));

    test('releases the lock in the same step as its job finishes, and the next job gets epoch 2', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, term } = await givenCluster(store);
        const { job: first } = await store.jobs.enqueue({ key: 'a' });
        const { job: second } = await store.jobs.enqueue({ key: 'b' });
        await store.dispatch.place({ id: first.id, host: 'box-1', term, workspace: 'w' });
        const guard = { id: first.id, session: runner.id, epoch: 1 };
        await store.jobs.start(guard);
        const stale = await store.jobs.finish({ ...guard, epoch: 2, status: 'done' });
        assert.equal(stale.ok, false);
        assert.equal(
          (await store.workspaceLocks.current('w'))?.jobId,
          first.id,
          'a refused finish keeps the lock',
        );
        assert.ok((await store.jobs.finish({ ...guard, status: 'done', exitCode: 0 })).ok);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const tail = (await store.audit.list({ jobId: first.id })).slice(-2);
        assert.deepEqual(
          tail.map((entry) => [entry.type, entry.session, entry.epoch]),
          [
            ['job:finished', runner.id, 1],
            ['lock:released', runner.id, 1],
          ],
        );
        assert.deepEqual(tail[1]?.detail, { workspace: 'w', outcome: 'released' });
        assert.ok((await store.dispatch.place({ id: second.id, host: 'box-1', term, workspace: 'w' })).ok);
        assert.equal((await store.workspaceLocks.current('w'))?.epoch, 2);
      }));

    test('releases the lock in the same step as its job is cancelled before it runs', () =>
      withFixture(harness, async ({ store }) => {
        const { term } = await givenCluster(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' })).ok);
        assert.ok((await store.jobs.cancel({ id: job.id })).ok);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const tail = (await store.audit.list({ jobId: job.id })).slice(-2);
        assert.deepEqual(
          tail.map((entry) => entry.type),
          ['job:cancelled', 'lock:released'],
        );
        assert.deepEqual(tail[1]?.detail, { workspace: 'w', outcome: 'released' });
      }));

    test('keeps the lock of a cancelled running job until its runner releases it, the agent dead', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, term } = await givenCluster(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' })).ok);
        await store.jobs.start({ id: job.id, session: runner.id, epoch: 1 });
        assert.ok((await store.jobs.cancel({ id: job.id })).ok);
        const { job: next } = await store.jobs.enqueue({ key: 'next' });
        const waits = await store.dispatch.place({ id: next.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(!waits.ok && waits.reason === 'workspace_held' && waits.holder.jobId === job.id);
        const stranger = await givenSession(store);
        assert.deepEqual(await store.workspaceLocks.releaseJob({ jobId: job.id, session: stranger.id }), []);
        const released = await store.workspaceLocks.releaseJob({ jobId: job.id, session: runner.id });
        const rows = released.map((lock) => [lock.workspace, lock.jobId, lock.session, lock.epoch]);
        assert.deepEqual(rows, [['w', job.id, runner.id, 1]]);
        assert.deepEqual(await store.workspaceLocks.releaseJob({ jobId: job.id, session: runner.id }), []);
        const last = (await store.audit.list({ jobId: job.id })).at(-1);
        assert.equal(last?.type, 'lock:released');
        assert.deepEqual(last.detail, { workspace: 'w', outcome: 'released' });
        assert.ok((await store.dispatch.place({ id: next.id, host: 'box-1', term, workspace: 'w' })).ok);
      }));

    test('releases the lock when its job is requeued after a crash, or failed with attempts exhausted', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, term } = await givenCluster(store);
        const { job } = await store.jobs.enqueue({ key: 'k', attemptMax: 2 });
        for (const expected of ['queued', 'failed'] as const) {
          const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
          assert.ok(placed.ok, `placed for ${expected}`);
          const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
          const policy = { backoffBaseMs: 1, backoffMaxMs: 1 };
          const result = await store.dispatch.requeue({ ...guard, reason: 'killed by SIGKILL', policy });
          assert.ok(result.ok);
          assert.equal(result.job.status, expected);
          assert.equal(await store.workspaceLocks.current('w'), null);
          await sleep(5);
        }
        const released = (await lockEntries(store, job.id)).filter((entry) => entry.type === 'lock:released');
        assert.deepEqual(
          released.map((entry) => [entry.epoch, entry.detail['outcome']]),
          [
            [1, 'released'],
            [2, 'released'],
          ],
        );
      }));

    test('gives a workspace to exactly one of many jobs placed concurrently through two stores', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        const { runner, term } = await givenCluster(store);
        const jobs = [];
        for (let index = 0; index < 8; index++)
          jobs.push((await store.jobs.enqueue({ key: `k${index}` })).job);
        const results = await Promise.all(
          jobs.map((job, index) =>
            (index % 2 === 0 ? store : other).dispatch.place({
              id: job.id,
              host: 'box-1',
              term,
              workspace: 'w',
            }),
          ),
        ).finally(() => other.close());
        const winners = results.filter((result) => result.ok);
        assert.equal(winners.length, 1);
        const winner = winners[0];
        assert.ok(winner?.ok);
        for (const refusal of results.filter((result) => !result.ok)) {
          assert.ok(!refusal.ok && refusal.reason === 'workspace_held');
          assert.deepEqual(
            [refusal.holder.jobId, refusal.holder.session, refusal.holder.epoch],
            [winner.job.id, runner.id, 1],
          );
        }
        const queued = await store.jobs.list({ status: ['queued'] });
        assert.equal(queued.length, 7);
        assert.equal((await store.audit.list({ type: 'lock:acquired' })).length, 1);
        assert.equal((await store.audit.list({ type: 'job:placed' })).length, 1);
      }));
  });

  describe('locks recovered with their run', () => {
    /** Job `k` placed on box-1 with workspace w, started, its agent holding the claim. */
    async function givenLockedRun(store: Store) {
      const { runner, term } = await givenCluster(store);
      const { job } = await store.jobs.enqueue({ key: 'k' });
      assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' })).ok);
      await store.jobs.start({ id: job.id, session: runner.id, epoch: 1 });
      const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
      await store.claims.acquire({ key: 'k', session: agent.id });
      await store.dispatch.attach({
        id: job.id,
        session: runner.id,
        epoch: 1,
        agentSession: agent.id,
        pid: 3,
      });
      return { runner, agent, job, term };
    }

    test('ends a session with its workspace locks, audited as abandoned before session:ended', () =>
      withFixture(harness, async ({ store }) => {
        const { runner } = await givenLockedRun(store);
        await store.workspaces.add({ name: 'v', path: '/srv/v', kind: 'dir' });
        await store.workspaceLocks.acquire({ workspace: 'v', session: runner.id });
        assert.deepEqual(
          await store.sessions.end(runner.id),
          { ended: true, jobsRequeued: [] },
          'its placed job stays',
        );
        assert.equal(await store.workspaceLocks.current('w'), null);
        assert.equal(await store.workspaceLocks.current('v'), null);
        const entries = (await store.audit.list({ session: runner.id })).slice(-3);
        assert.deepEqual(
          entries.map((entry) => [
            entry.type,
            entry.detail['workspace'] ?? null,
            entry.detail['outcome'] ?? null,
          ]),
          [
            ['lock:released', 'v', 'abandoned'],
            ['lock:released', 'w', 'abandoned'],
            ['session:ended', null, null],
          ],
        );
        assert.equal(entries[1]?.key, 'k');
        assert.equal((await store.sessions.end(runner.id)).ended, false);
        assert.equal((await lockEntries(store)).filter((entry) => entry.type === 'lock:released').length, 2);
      }));

    test("rescues a stale runner's locks with its claims, as recovered, and requeues the job once", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { runner, job } = await givenLockedRun(store);
        await moveClock(120);
        const report = await store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY });
        assert.equal(report.claimsReleased, 1);
        assert.equal(report.locksReleased, 1);
        assert.deepEqual(report.jobsRequeued, [job.id]);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const released = (await lockEntries(store)).filter((entry) => entry.type === 'lock:released');
        assert.deepEqual(
          released.map((entry) => [entry.session, entry.jobId, entry.detail['outcome']]),
          [[runner.id, job.id, 'recovered']],
        );
        const stale = (await store.audit.list({ session: runner.id })).map((entry) => entry.type);
        assert.ok(stale.indexOf('session:stale') < stale.indexOf('lock:released'));
      }));

    test('releases each lock once when two rescues race', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const other = await clocked();
        const { runner } = await givenLockedRun(store);
        await store.workspaces.add({ name: 'v', path: '/srv/v', kind: 'dir' });
        await store.workspaceLocks.acquire({ workspace: 'v', session: runner.id });
        await moveClock(120);
        const [first, second] = await Promise.all([
          store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY }),
          other.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY }),
        ]);
        assert.equal(first.locksReleased + second.locksReleased, 2);
        assert.equal(first.jobsRequeued.length + second.jobsRequeued.length, 1);
        const released = (await lockEntries(store)).filter((entry) => entry.type === 'lock:released');
        assert.deepEqual(released.map((entry) => entry.detail['workspace']).sort(), ['v', 'w']);
      }));

    test('releases the lock of a job whose agent session ended while its runner lives, as recovered', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, agent, job } = await givenLockedRun(store);
        await store.sessions.end(agent.id);
        assert.equal((await store.workspaceLocks.current('w'))?.session, runner.id, 'the runner holds it');
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.jobsRequeued, [job.id]);
        assert.equal(report.locksReleased, 0);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const last = (await store.audit.list({ jobId: job.id })).at(-1);
        assert.equal(last?.type, 'lock:released');
        assert.deepEqual(last.detail, { workspace: 'w', outcome: 'recovered' });
      }));
  });

  describe('skipped jobs', () => {
    test('puts a queued job behind a backoff with its reason, audited once per reason', () =>
      withFixture(harness, async ({ store }) => {
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const detail = { reason: 'workspace_unresolved', cause: 'no workspace', fix: 'bind one' };
        const reason = 'SKIPPED workspace_unresolved: no workspace';
        const skip = { id: job.id, term, reason, detail, backoffMs: 60_000 };
        assert.equal(await store.dispatch.skip(skip), true);
        const after = await store.jobs.get(job.id);
        assert.equal(after?.status, 'queued');
        assert.equal(after.reason, skip.reason);
        assert.ok(after.runAfter >= (await store.now()) + 50_000);
        assert.deepEqual(await store.dispatch.queued({ limit: 10 }), []);
        assert.equal(await store.dispatch.skip(skip), true);
        assert.equal(
          await store.dispatch.skip({ ...skip, reason: 'SKIPPED workspace_unresolved: other' }),
          true,
        );
        const skipped = await store.audit.list({ type: 'job:skipped' });
        assert.deepEqual(
          skipped.map((entry) => [entry.key, entry.jobId, entry.session]),
          [
            ['k', job.id, null],
            ['k', job.id, null],
          ],
        );
        assert.deepEqual(skipped[0]?.detail, detail);
      }));

    test('skips nothing under a replaced term or once the job left the queue', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const old = await givenLeader(store, 'leader-a', 80);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        await moveClock(120);
        const skip = { id: job.id, term: old, reason: 'SKIPPED', detail: {}, backoffMs: 1000 };
        assert.equal(await store.dispatch.skip(skip), false);
        assert.deepEqual(await store.jobs.get(job.id), job);
        const term = await givenLeader(store, 'leader-b');
        await store.jobs.cancel({ id: job.id });
        assert.equal(await store.dispatch.skip({ ...skip, term }), false);
        assert.deepEqual(await store.audit.list({ type: 'job:skipped' }), []);
      }));
  });
}
