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
    .filter((e) => e.type.startsWith('job:') && e.type !== 'job:enqueued')
    .map((e) => [e.type, e.jobId, e.epoch]);

/** Session s runs job a; job b is queued behind it. */
async function runningAThenQueuedB(store: Store) {
  const s = await givenSession(store);
  await store.jobs.enqueue({ key: 'a', priority: 1 });
  await store.jobs.enqueue({ key: 'b', priority: 2 });
  const a = await store.jobs.claimNext({ session: s.id, start: true });
  assert.ok(a !== null);
  return { s, a };
}

export function exerciseJobLoop(h: Harness): void {
  describe('finish and claim the next in one step', () => {
    test('finishes the job and starts the next, audited finish first, as the two calls would', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'a', priority: 1 });
        await store.jobs.enqueue({ key: 'b', priority: 2 });
        const a = await store.jobs.claimNext({ session: s.id, start: true });
        assert.ok(a !== null && a.key === 'a');
        const guard = { id: a.id, session: s.id, epoch: a.epoch };
        const r = await store.jobs.finishAndClaimNext({ ...guard, status: 'done', exitCode: 0, start: true });
        assert.ok(r.finished.ok);
        assert.equal(r.finished.job.status, 'done');
        assert.equal(r.finished.job.exitCode, 0);
        assert.deepEqual(await store.jobs.get(a.id), r.finished.job);
        const b = r.next;
        assert.ok(b !== null);
        assert.equal(b.key, 'b');
        assert.equal(b.status, 'running');
        assert.equal(b.session, s.id);
        assert.equal(b.host, 'box-1');
        assert.equal(b.epoch, 1);
        assert.equal(b.startedAt, b.claimedAt);
        assert.deepEqual(await store.jobs.get(b.id), b);
        const entries = await store.audit.list();
        assert.deepEqual(trail(entries), [
          ['job:claimed', a.id, 1],
          ['job:started', a.id, 1],
          ['job:finished', a.id, 1],
          ['job:claimed', b.id, 1],
          ['job:started', b.id, 1],
        ]);
        assert.deepEqual(entries.find((e) => e.type === 'job:finished')?.detail, {
          status: 'done',
          exitCode: 0,
        });
        const last = await store.jobs.finishAndClaimNext({
          id: b.id,
          session: s.id,
          epoch: 1,
          status: 'failed',
        });
        assert.ok(last.finished.ok && last.finished.job.status === 'failed');
        assert.equal(last.next, null, 'an empty queue: nothing claimed, the finish stands');
      }));

    test('claims without starting unless asked, and keeps queue order and due times', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        const policy = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };
        await store.jobs.enqueue({ key: 'later', priority: 0 });
        const first = await store.jobs.claimNext({ session: s.id, start: true });
        assert.ok(first !== null);
        await store.dispatch.requeue({
          id: first.id,
          session: s.id,
          epoch: first.epoch,
          reason: 'x',
          policy,
        });
        await store.jobs.enqueue({ key: 'x', priority: 1 });
        await store.jobs.enqueue({ key: 'y', priority: 5 });
        await store.jobs.enqueue({ key: 'z', priority: 3 });
        let job = await store.jobs.claimNext({ session: s.id, start: true });
        const order: string[] = [];
        while (job !== null) {
          order.push(job.key);
          const guard = { id: job.id, session: s.id, epoch: job.epoch };
          const r = await store.jobs.finishAndClaimNext({ ...guard, status: 'done' });
          assert.ok(r.finished.ok);
          if (r.next !== null) assert.equal(r.next.status, 'claimed');
          if (r.next === null) break;
          job = (await store.jobs.start({ id: r.next.id, session: s.id, epoch: r.next.epoch })).job ?? null;
        }
        assert.deepEqual(order, ['x', 'z', 'y']);
        assert.equal((await store.jobs.get(first.id))?.status, 'queued', 'not due yet');
      }));

    test('a lost finish changes nothing of that job and still claims the next', () =>
      withFixture(h, async ({ store }) => {
        const { s, a } = await runningAThenQueuedB(store);
        const stale = { id: a.id, session: s.id, epoch: a.epoch + 1 };
        const r = await store.jobs.finishAndClaimNext({ ...stale, status: 'done', start: true });
        assert.equal(r.finished.ok, false);
        assert.ok(!r.finished.ok && r.finished.reason === 'lost');
        assert.deepEqual(r.finished.job, a);
        assert.deepEqual(await store.jobs.get(a.id), a);
        assert.equal(r.next?.key, 'b');
        assert.equal(
          (await store.audit.list({ jobId: a.id })).some((e) => e.type === 'job:finished'),
          false,
        );
      }));

    test('refuses a session that is not live and changes nothing, finish included', () =>
      withFixture(h, async ({ store }) => {
        const { s, a } = await runningAThenQueuedB(store);
        await store.sessions.end(s.id);
        const before = await store.audit.list();
        const jobs = await store.jobs.list();
        const guard = { id: a.id, session: s.id, epoch: a.epoch, status: 'done' as const };
        await assert.rejects(store.jobs.finishAndClaimNext(guard), FencedError);
        await assert.rejects(store.jobs.finishAndClaimNext({ ...guard, session: 999_999 }), NotFoundError);
        assert.deepEqual(await store.audit.list(), before);
        assert.deepEqual(await store.jobs.list(), jobs);
      }));

    test("releases the finished job's workspace lock in the same step, before the next claim", () =>
      withFixture(h, async ({ store }) => {
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
        const r = await store.jobs.finishAndClaimNext({ ...guard, status: 'done' });
        assert.ok(r.finished.ok && r.next !== null);
        assert.equal(await store.workspaceLocks.current('w'), null);
        const tail = (await store.audit.list()).slice(-4);
        assert.deepEqual(
          tail.map((e) => [e.type, e.jobId]),
          [
            ['job:finished', job.id],
            ['lock:released', job.id],
            ['task:state', null],
            ['job:claimed', r.next.id],
          ],
        );
        assert.deepEqual(tail[2]?.detail, {
          from: 'open',
          to: 'done',
          action: 'finish',
          by: `job ${job.id}`,
          reason: null,
        });
        assert.deepEqual(tail[1]?.detail, { workspace: 'w', outcome: 'released' });
      }));

    test('a requeued job forgets the term that placed it, and a pull-mode claim carries none', () =>
      withFixture(h, async ({ store }) => {
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
        const s = await givenSession(store);
        const pulled = await store.jobs.claimNext({ session: s.id, start: true });
        assert.equal(pulled?.id, job.id);
        assert.equal(pulled?.term, null);
      }));

    test('never hands one job to two looping workers, and finishes each exactly once', () =>
      withFixture(h, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          for (let i = 0; i < 30; i++) await store.jobs.enqueue({ key: `k${i}` });
          const sessions = await Promise.all(Array.from({ length: 6 }, () => givenSession(store)));
          const claimed: number[] = [];
          await Promise.all(
            sessions.map(async (s, i) => {
              const st = i % 2 === 0 ? store : other;
              let job: Job | null = await st.jobs.claimNext({ session: s.id, start: true });
              while (job !== null) {
                claimed.push(job.id);
                const guard = { id: job.id, session: s.id, epoch: job.epoch };
                const r = await st.jobs.finishAndClaimNext({ ...guard, status: 'done', start: true });
                assert.ok(r.finished.ok);
                job = r.next;
              }
            }),
          );
          assert.equal(claimed.length, 30);
          assert.equal(new Set(claimed).size, 30);
          const all = await store.jobs.list();
          assert.ok(all.every((j) => j.status === 'done' && j.attempt === 1));
          const finishes = (await store.audit.list({ limit: 1000 })).filter((e) => e.type === 'job:finished');
          assert.equal(finishes.length, 30);
        } finally {
          await other.close();
        }
      }));
  });
}
