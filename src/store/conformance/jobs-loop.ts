/**
 * jobs.finishAndClaimNext: a looping worker's finish and its next claim in one step, with the
 * guards, answers and audit rows the two calls would have given one after the other.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, NotFoundError } from '../../core/errors.js';
import type { Job } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const trail = (entries: readonly { type: string; jobId: number | null; epoch: number | null }[]) =>
  entries
    .filter((entry) => entry.type.startsWith('job:') && entry.type !== 'job:enqueued')
    .map((entry) => [entry.type, entry.jobId, entry.epoch]);

/** Session s runs job a; job b is queued behind it. */
async function runningAThenQueuedB(store: Store) {
  const session = await givenSession(store);
  await store.jobs.enqueue({ key: 'a', priority: 1 });
  await store.jobs.enqueue({ key: 'b', priority: 2 });
  const first = await store.jobs.claimNext({ session: session.id, start: true });
  assert.ok(first !== null);
  return { session, first };
}

export function exerciseJobLoop(harness: Harness): void {
  describe('finish and claim the next in one step', () => {
    test("a finish's reason is in its job:finished row, through jobs.finish and finishAndClaimNext", () =>
      withFixture(harness, async ({ store }) => {
        const { session, first } = await runningAThenQueuedB(store);
        const reason = 'exit 3: the tests failed';
        const looped = await store.jobs.finishAndClaimNext({
          ...{ id: first.id, session: session.id, epoch: first.epoch },
          ...{ status: 'failed', exitCode: 3, reason, start: true },
        });
        assert.ok(looped.finished.ok && looped.next !== null);
        const { next } = looped;
        const guard = { id: next.id, session: session.id, epoch: next.epoch };
        assert.ok((await store.jobs.finish({ ...guard, status: 'oom_killed', reason: 'over 512 MB' })).ok);
        const finished = await store.audit.list({ type: 'job:finished' });
        assert.deepEqual(
          finished.map((entry) => [entry.jobId, entry.detail]),
          [
            [first.id, { status: 'failed', exitCode: 3, reason }],
            [next.id, { status: 'oom_killed', exitCode: null, reason: 'over 512 MB' }],
          ],
        );
      }));

    test('finishes the job and starts the next, audited finish first, as the two calls would', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'a', priority: 1 });
        await store.jobs.enqueue({ key: 'b', priority: 2 });
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null && first.key === 'a');
        const guard = { id: first.id, session: session.id, epoch: first.epoch };
        const result = await store.jobs.finishAndClaimNext({
          ...guard,
          status: 'done',
          exitCode: 0,
          start: true,
        });
        assert.ok(result.finished.ok);
        assert.equal(result.finished.job.status, 'done');
        assert.equal(result.finished.job.exitCode, 0);
        assert.deepEqual(await store.jobs.get(first.id), result.finished.job);
        const second = result.next;
        assert.ok(second !== null);
        assert.equal(second.key, 'b');
        assert.equal(second.status, 'running');
        assert.equal(second.session, session.id);
        assert.equal(second.host, 'box-1');
        assert.equal(second.epoch, 1);
        assert.equal(second.startedAt, second.claimedAt);
        assert.deepEqual(await store.jobs.get(second.id), second);
        const entries = await store.audit.list();
        assert.deepEqual(trail(entries), [
          ['job:claimed', first.id, 1],
          ['job:finished', first.id, 1],
          ['job:claimed', second.id, 1],
        ]);
        // Each claim started its job: one row, which says so (decision 0023).
        assert.deepEqual(
          entries.filter((entry) => entry.type === 'job:claimed').map((entry) => entry.detail),
          [
            { attempt: 1, host: 'box-1', started: true },
            { attempt: 1, host: 'box-1', started: true },
          ],
        );
        assert.deepEqual(entries.find((entry) => entry.type === 'job:finished')?.detail, {
          status: 'done',
          exitCode: 0,
          task: { from: 'open', to: 'done' },
        });
        const last = await store.jobs.finishAndClaimNext({
          id: second.id,
          session: session.id,
          epoch: 1,
          status: 'failed',
        });
        assert.ok(last.finished.ok && last.finished.job.status === 'failed');
        assert.equal(last.next, null, 'an empty queue: nothing claimed, the finish stands');
      }));

    test("each finish's row records its own task's move, to review or to done, when workers finish together", () =>
      withFixture(harness, async ({ store }) => {
        const sessions = [await givenSession(store, 'box-1'), await givenSession(store, 'box-2')];
        sessions.push(await givenSession(store, 'box-3'));
        await store.tasks.add({ key: 'r', title: 'review me', reviewRequired: true });
        for (const [index, key] of ['x', 'r', 'a'].entries())
          await store.jobs.enqueue({ key, priority: index });
        const running: { job: Job; session: number }[] = [];
        for (const { id: session } of sessions) {
          const job = await store.jobs.claimNext({ session, start: true });
          assert.ok(job !== null);
          running.push({ job, session });
        }
        assert.deepEqual(
          running.map(({ job }) => job.key),
          ['x', 'r', 'a'],
        );
        const mark = (await store.audit.list()).at(-1)?.id ?? 0;
        // At once, as looping workers of one process finish: on PostgreSQL, with one batch in
        // flight, the first call goes alone and the two behind it share one statement
        // (postgres/batcher.ts, jobs.ts BATCHES_IN_FLIGHT); on SQLite all three share a commit.
        const results = await Promise.all(
          running.map(({ job, session }) =>
            store.jobs.finishAndClaimNext({ id: job.id, session, epoch: job.epoch, status: 'done' }),
          ),
        );
        assert.ok(results.every((result) => result.finished.ok && result.next === null));
        const finished = await store.audit.list({ afterId: mark, type: 'job:finished' });
        assert.equal(finished.length, 3);
        const toDone = { status: 'done', exitCode: null, task: { from: 'open', to: 'done' } };
        assert.deepEqual(
          new Map(finished.map((entry) => [entry.key, entry.detail])),
          new Map<string, unknown>([
            ['x', toDone],
            ['r', { ...toDone, task: { from: 'open', to: 'in_review' } }],
            ['a', toDone],
          ]),
        );
        const states = await Promise.all(
          ['x', 'r', 'a'].map(async (key) => (await store.tasks.get(key))?.state),
        );
        assert.deepEqual(states, ['done', 'in_review', 'done']);
      }));

    test('claims without starting unless asked, and keeps queue order and due times', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const policy = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };
        await store.jobs.enqueue({ key: 'later', priority: 0 });
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null);
        await store.dispatch.requeue({
          id: first.id,
          session: session.id,
          epoch: first.epoch,
          reason: 'x',
          policy,
        });
        await store.jobs.enqueue({ key: 'x', priority: 1 });
        await store.jobs.enqueue({ key: 'y', priority: 5 });
        await store.jobs.enqueue({ key: 'z', priority: 3 });
        let job = await store.jobs.claimNext({ session: session.id, start: true });
        const order: string[] = [];
        while (job !== null) {
          order.push(job.key);
          const guard = { id: job.id, session: session.id, epoch: job.epoch };
          const result = await store.jobs.finishAndClaimNext({ ...guard, status: 'done' });
          assert.ok(result.finished.ok);
          if (result.next !== null) assert.equal(result.next.status, 'claimed');
          if (result.next === null) break;
          job =
            (await store.jobs.start({ id: result.next.id, session: session.id, epoch: result.next.epoch }))
              .job ?? null;
        }
        assert.deepEqual(order, ['x', 'z', 'y']);
        assert.equal((await store.jobs.get(first.id))?.status, 'queued', 'not due yet');
      }));

    test('a lost finish changes nothing of that job and still claims the next', () =>
      withFixture(harness, async ({ store }) => {
        const { session, first } = await runningAThenQueuedB(store);
        const stale = { id: first.id, session: session.id, epoch: first.epoch + 1 };
        const result = await store.jobs.finishAndClaimNext({ ...stale, status: 'done', start: true });
        assert.equal(result.finished.ok, false);
        assert.ok(!result.finished.ok && result.finished.reason === 'lost');
        assert.deepEqual(result.finished.job, first);
        assert.deepEqual(await store.jobs.get(first.id), first);
        assert.equal(result.next?.key, 'b');
        assert.equal(
          (await store.audit.list({ jobId: first.id })).some((entry) => entry.type === 'job:finished'),
          false,
        );
      }));

    test('refuses a session that is not live and changes nothing, finish included', () =>
      withFixture(harness, async ({ store }) => {
        const { session, first } = await runningAThenQueuedB(store);
        await store.sessions.end(session.id);
        const before = await store.audit.list();
        const jobs = await store.jobs.list();
        const guard = { id: first.id, session: session.id, epoch: first.epoch, status: 'done' as const };
        await assert.rejects(store.jobs.finishAndClaimNext(guard), FencedError);
        await assert.rejects(store.jobs.finishAndClaimNext({ ...guard, session: 999_999 }), NotFoundError);
        assert.deepEqual(await store.audit.list(), before);
        assert.deepEqual(await store.jobs.list(), jobs);
      }));

    test('refuses a job that does not exist and changes nothing, the next claim included', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await runningAThenQueuedB(store);
        const before = await store.audit.list();
        const jobs = await store.jobs.list();
        const unknown = { id: 999_999, session: session.id, epoch: 1, status: 'done' as const, start: true };
        await assert.rejects(store.jobs.finishAndClaimNext(unknown), NotFoundError);
        assert.deepEqual(await store.audit.list(), before);
        assert.deepEqual(await store.jobs.list(), jobs, 'b is still queued, claimed by no one');
      }));

    test("releases the finished job's workspace lock in the same step, before the next claim", () =>
      withFixture(harness, async ({ store }) => {
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const { job } = await store.jobs.enqueue({ key: 'a', priority: 1 });
        await store.jobs.enqueue({ key: 'b', priority: 2 });
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'w' });
        assert.ok(placed.ok);
        const started = await store.jobs.start({ id: job.id, session: runner.id, epoch: placed.job.epoch });
        assert.ok(started.ok);
        const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
        const result = await store.jobs.finishAndClaimNext({ ...guard, status: 'done' });
        assert.ok(result.finished.ok && result.next !== null);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const tail = (await store.audit.list()).slice(-3);
        assert.deepEqual(
          tail.map((entry) => [entry.type, entry.jobId]),
          [
            ['job:finished', job.id],
            ['lock:released', job.id],
            ['job:claimed', result.next.id],
          ],
        );
        // The finish's one row records the task's move: no task:state row beside it (decision 0023).
        assert.deepEqual(tail[0]?.detail, {
          status: 'done',
          exitCode: null,
          task: { from: 'open', to: 'done' },
        });
        assert.equal(tail[0]?.session, runner.id);
        assert.deepEqual(tail[1]?.detail, { workspace: 'w', outcome: 'released' });
      }));

    test('a requeued job forgets the term that placed it, and a pull-mode claim carries none', () =>
      withFixture(harness, async ({ store }) => {
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'a' });
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(placed.ok && placed.job.term === term.term);
        const policy = { backoffBaseMs: 0, backoffMaxMs: 0 };
        const guard = { id: job.id, session: runner.id, epoch: placed.job.epoch };
        const back = await store.dispatch.requeue({ ...guard, reason: 'crash', policy });
        assert.ok(back.ok);
        assert.equal(back.job.term, null);
        const session = await givenSession(store);
        const pulled = await store.jobs.claimNext({ session: session.id, start: true });
        assert.equal(pulled?.id, job.id);
        assert.equal(pulled?.term, null);
      }));

    test('never hands one job to two looping workers, and finishes each exactly once', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          for (let index = 0; index < 30; index++) await store.jobs.enqueue({ key: `k${index}` });
          const sessions = await Promise.all(Array.from({ length: 6 }, () => givenSession(store)));
          const claimed: number[] = [];
          await Promise.all(
            sessions.map(async (session, index) => {
              const st = index % 2 === 0 ? store : other;
              let job: Job | null = await st.jobs.claimNext({ session: session.id, start: true });
              while (job !== null) {
                claimed.push(job.id);
                const guard = { id: job.id, session: session.id, epoch: job.epoch };
                const result = await st.jobs.finishAndClaimNext({ ...guard, status: 'done', start: true });
                assert.ok(result.finished.ok);
                job = result.next;
              }
            }),
          );
          assert.equal(claimed.length, 30);
          assert.equal(new Set(claimed).size, 30);
          const all = await store.jobs.list();
          assert.ok(all.every((job) => job.status === 'done' && job.attempt === 1));
          const finishes = (await store.audit.list({ limit: 1000 })).filter(
            (entry) => entry.type === 'job:finished',
          );
          assert.equal(finishes.length, 30);
        } finally {
          await other.close();
        }
      }));
  });
}
