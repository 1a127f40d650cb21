import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError } from '../../core/errors.js';
import { givenSession, withFixture, type Harness } from './harness.js';

export function exerciseJobs(harness: Harness): void {
  describe('queue jobs', () => {
    test('enqueues a job for a new task, creating the task', () =>
      withFixture(harness, async ({ store }) => {
        const result = await store.jobs.enqueue({
          key: 'k',
          priority: 3,
          ramMb: 512,
          command: 'echo {{key}}',
        });
        assert.equal(result.created, true);
        assert.equal(result.job.status, 'queued');
        assert.equal(result.job.key, 'k');
        assert.equal(result.job.priority, 3);
        assert.equal(result.job.ramMb, 512);
        assert.equal(result.job.command, 'echo {{key}}');
        assert.equal(result.job.attempt, 0);
        assert.equal(result.job.epoch, 0);
        assert.notEqual(await store.tasks.get('k'), null);
        assert.deepEqual(await store.jobs.get(result.job.id), result.job);
      }));

    test('returns the active job instead of queueing the same task twice', () =>
      withFixture(harness, async ({ store }) => {
        const first = await store.jobs.enqueue({ key: 'k' });
        const second = await store.jobs.enqueue({ key: 'k', priority: 1 });
        assert.equal(second.created, false);
        assert.equal(second.job.id, first.job.id);
        assert.equal((await store.jobs.list()).length, 1);
      }));

    test('queues a task again once its previous job has ended', () =>
      withFixture(harness, async ({ store }) => {
        const first = await store.jobs.enqueue({ key: 'k' });
        await store.jobs.cancel({ id: first.job.id });
        const again = await store.jobs.enqueue({ key: 'k' });
        assert.equal(again.created, true);
        assert.notEqual(again.job.id, first.job.id);
      }));

    test('claims queued jobs by priority, then queued_at, then id', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        for (const [key, priority] of [
          ['c', 5],
          ['a', 1],
          ['d', 5],
          ['b', 1],
        ] as const) {
          await store.jobs.enqueue({ key, priority });
        }
        const order: string[] = [];
        for (;;) {
          const job = await store.jobs.claimNext({ session: session.id });
          if (job === null) break;
          assert.equal(job.status, 'claimed');
          assert.equal(job.session, session.id);
          assert.equal(job.attempt, 1);
          assert.equal(job.epoch, 1);
          order.push(job.key);
        }
        assert.deepEqual(order, ['a', 'b', 'c', 'd']);
      }));

    test('returns null when nothing is queued', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: session.id }), null);
      }));

    test('refuses to hand a job to an ended session', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'k' });
        await store.sessions.end(session.id);
        await assert.rejects(store.jobs.claimNext({ session: session.id }), FencedError);
        assert.equal((await store.jobs.list())[0]?.status, 'queued');
      }));

    test('runs a job through claimed, running and done, guarded by session and epoch', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: session.id });
        assert.ok(job !== null);
        assert.equal(job.host, 'box-1');
        const started = await store.jobs.start({ id: job.id, session: session.id, epoch: job.epoch });
        assert.ok(started.ok);
        assert.equal(started.job.status, 'running');
        const done = await store.jobs.finish({
          id: job.id,
          session: session.id,
          epoch: job.epoch,
          status: 'done',
          exitCode: 0,
        });
        assert.ok(done.ok);
        assert.equal(done.job.status, 'done');
        assert.equal(done.job.exitCode, 0);
        assert.ok(done.job.finishedAt !== null);
      }));

    test('claims and starts a job in one step with start: true, in one ledger row that says so', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        const other = await givenSession(store, 'box-2');
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(job !== null);
        assert.equal(job.status, 'running');
        assert.equal(job.session, session.id);
        assert.equal(job.host, 'box-1');
        assert.equal(job.attempt, 1);
        assert.equal(job.epoch, 1);
        assert.ok(job.claimedAt !== null);
        assert.equal(job.startedAt, job.claimedAt);
        assert.deepEqual(await store.jobs.get(job.id), job);
        const trail = (await store.audit.list({ jobId: job.id })).filter(
          (entry) => entry.type !== 'job:enqueued',
        );
        assert.deepEqual(
          trail.map((entry) => [entry.type, entry.session, entry.epoch, entry.host, entry.detail]),
          [['job:claimed', session.id, 1, 'box-1', { attempt: 1, host: 'box-1', started: true }]],
        );
        assert.equal(trail[0]?.at, job.startedAt);
        // Already running: a second start loses, and so does a finish by anyone else.
        const again = await store.jobs.start({ id: job.id, session: session.id, epoch: job.epoch });
        assert.equal(again.ok, false);
        const stranger = await store.jobs.finish({ id: job.id, session: other.id, epoch: 1, status: 'done' });
        assert.equal(stranger.ok, false);
        const stale = await store.jobs.finish({ id: job.id, session: session.id, epoch: 2, status: 'done' });
        assert.equal(stale.ok, false);
        const done = await store.jobs.finish({
          id: job.id,
          session: session.id,
          epoch: 1,
          status: 'done',
          exitCode: 0,
        });
        assert.ok(done.ok);
        assert.equal(done.job.status, 'done');
        assert.equal(await store.jobs.claimNext({ session: session.id, start: true }), null);
      }));

    test('refuses claimNext with start to an ended session, leaving the job queued', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'k' });
        await store.sessions.end(session.id);
        await assert.rejects(store.jobs.claimNext({ session: session.id, start: true }), FencedError);
        assert.equal((await store.jobs.list())[0]?.status, 'queued');
      }));

    test('keeps queue order and skips jobs not yet due once the engine has statistics', () =>
      withFixture(harness, async ({ store, raw }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'later', priority: 0 });
        const first = await store.jobs.claimNext({ session: session.id, start: true });
        assert.ok(first !== null);
        const back = await store.dispatch.requeue({
          id: first.id,
          session: session.id,
          epoch: first.epoch,
          reason: 'x',
          policy: { backoffBaseMs: 60_000, backoffMaxMs: 60_000 },
        });
        assert.ok(back.ok && back.job.status === 'queued');
        for (const [key, priority] of [
          ['c', 5],
          ['a', 1],
          ['b', 1],
        ] as const) {
          await store.jobs.enqueue({ key, priority });
        }
        await raw.exec('ANALYZE');
        const order: string[] = [];
        for (;;) {
          const job = await store.jobs.claimNext({ session: session.id });
          if (job === null) break;
          order.push(job.key);
        }
        assert.deepEqual(order, ['a', 'b', 'c']);
        assert.equal((await store.jobs.get(first.id))?.status, 'queued');
      }));

    test('tells a transition carrying a wrong epoch or session that it lost, changing nothing', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const other = await givenSession(store);
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: session.id });
        assert.ok(job !== null);
        const wrongEpoch = await store.jobs.start({ id: job.id, session: session.id, epoch: job.epoch + 1 });
        const wrongSession = await store.jobs.start({ id: job.id, session: other.id, epoch: job.epoch });
        for (const result of [wrongEpoch, wrongSession]) {
          assert.equal(result.ok, false);
          assert.ok(!result.ok);
          assert.equal(result.reason, 'lost');
          assert.equal(result.job?.status, 'claimed');
        }
        const finishEarly = await store.jobs.finish({
          id: job.id,
          session: session.id,
          epoch: job.epoch,
          status: 'done',
        });
        assert.equal(finishEarly.ok, false);
        assert.deepEqual(await store.jobs.get(job.id), job);
      }));

    test('cancels a running job, after which its holder cannot finish it', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'k' });
        const job = await store.jobs.claimNext({ session: session.id });
        assert.ok(job !== null);
        await store.jobs.start({ id: job.id, session: session.id, epoch: job.epoch });
        const cancelled = await store.jobs.cancel({ id: job.id, reason: 'operator' });
        assert.ok(cancelled.ok);
        assert.equal(cancelled.job.status, 'cancelled');
        assert.equal(cancelled.job.reason, 'operator');
        const late = await store.jobs.finish({
          id: job.id,
          session: session.id,
          epoch: job.epoch,
          status: 'done',
        });
        assert.equal(late.ok, false);
        assert.equal((await store.jobs.get(job.id))?.status, 'cancelled');
        const again = await store.jobs.cancel({ id: job.id });
        assert.equal(again.ok, false);
      }));

    test('names who cancelled a job in its ledger row and its reason', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const result = await store.jobs.cancel({ id: job.id, actor: 'alice@box', by: session.id });
        assert.ok(result.ok);
        assert.equal(result.job.reason, 'cancelled by alice@box');
        const [row] = await store.audit.list({ jobId: job.id, type: 'job:cancelled' });
        assert.equal(row?.session, session.id);
        assert.equal(row?.detail['by'], 'alice@box');
      }));

    test("names who retried a job in the new job's ledger row", () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'k' });
        assert.ok((await store.jobs.cancel({ id: job.id })).ok);
        const { job: again } = await store.jobs.retry({ id: job.id, actor: 'alice@box' });
        const [row] = await store.audit.list({ jobId: again.id, type: 'job:enqueued' });
        assert.equal(row?.detail['retryOf'], job.id);
        assert.equal(row?.detail['by'], 'alice@box');
      }));

    test('retries an ended job with the RAM budget asked for, or none, and says so in the ledger', () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'k', ramMb: 64 });
        await store.jobs.cancel({ id: job.id });
        const { job: more } = await store.jobs.retry({ id: job.id, ramMb: 256 });
        assert.equal(more.ramMb, 256);
        assert.equal((await store.jobs.get(job.id))?.ramMb, 64, 'the ended job keeps its budget');
        const [row] = await store.audit.list({ jobId: more.id, type: 'job:enqueued' });
        assert.equal(row?.detail['ramMb'], 256);
        await store.jobs.cancel({ id: more.id });
        const { job: none } = await store.jobs.retry({ id: more.id, ramMb: null });
        assert.equal(none.ramMb, null);
        await store.jobs.cancel({ id: none.id });
        assert.equal((await store.jobs.retry({ id: none.id })).job.ramMb, null, "left out: the ended job's");
      }));

    test('never hands one job to two concurrent claimers', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          for (let index = 0; index < 20; index++) await store.jobs.enqueue({ key: `k${index}` });
          const sessions = await Promise.all(Array.from({ length: 8 }, () => givenSession(store)));
          const claimed: number[] = [];
          await Promise.all(
            sessions.map(async (session, index) => {
              const st = index % 2 === 0 ? store : other;
              for (;;) {
                const job = await st.jobs.claimNext({ session: session.id });
                if (job === null) return;
                claimed.push(job.id);
              }
            }),
          );
          assert.equal(claimed.length, 20);
          assert.equal(new Set(claimed).size, 20);
        } finally {
          await other.close();
        }
      }));

    test('lists jobs filtered by status and by task key', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'a', priority: 1 });
        await store.jobs.enqueue({ key: 'b', priority: 2 });
        await store.jobs.claimNext({ session: session.id });
        assert.deepEqual(
          (await store.jobs.list({ status: ['queued'] })).map((job) => job.key),
          ['b'],
        );
        assert.deepEqual(
          (await store.jobs.list({ status: ['claimed'] })).map((job) => job.key),
          ['a'],
        );
        assert.deepEqual(
          (await store.jobs.list({ key: 'b' })).map((job) => job.key),
          ['b'],
        );
        assert.equal((await store.jobs.list()).length, 2);
      }));
  });
}
