/**
 * Hand-off at enqueue (docs/decisions/0024): a session that waits for a job (claimNext's waitMs)
 * gets the next enqueued one claimed for it in the enqueue's own commit, and takes it with a read.
 * Each hand-off is taken once under its epoch; one never taken is claimed again under a new epoch,
 * which fences whoever had it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenSession, sleep, withFixture, type Harness } from './harness.js';

const WAIT = 60_000;

async function ledgerOf(store: Store, jobId: number) {
  return (await store.audit.list({ jobId })).map((entry) => ({
    type: entry.type,
    session: entry.session,
    epoch: entry.epoch,
    detail: entry.detail,
  }));
}

export function exerciseHandOff(harness: Harness): void {
  describe('hand-off at enqueue', () => {
    test('an enqueue claims its job for the waiting session in its own commit; the session takes it once', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const worker = await openAnother();
        try {
          const session = await givenSession(worker);
          assert.equal(await worker.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT }), null);
          const { job, created } = await store.jobs.enqueue({ key: 'k' });
          assert.equal(created, true);
          assert.deepEqual([job.status, job.session, job.epoch, job.attempt], ['running', session.id, 1, 1]);
          assert.equal(job.host, 'host-a');
          assert.deepEqual(await ledgerOf(store, job.id), [
            { type: 'job:enqueued', session: null, epoch: null, detail: { priority: 100, ramMb: null } },
            {
              type: 'job:claimed',
              session: session.id,
              epoch: 1,
              detail: { attempt: 1, host: 'host-a', started: true, handedOff: true },
            },
          ]);

          const taken = await worker.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT });
          assert.deepEqual([taken?.id, taken?.epoch, taken?.status], [job.id, 1, 'running']);
          // Taken once: the next call finds nothing (and waits again), the job keeps its epoch.
          assert.equal(await worker.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT }), null);
          assert.equal((await store.jobs.get(job.id))?.epoch, 1);
          const finished = await worker.jobs.finish({
            id: job.id,
            session: session.id,
            epoch: 1,
            status: 'done',
          });
          assert.equal(finished.ok, true);
          assert.equal((await ledgerOf(store, job.id)).filter((row) => row.type === 'job:claimed').length, 1);
        } finally {
          await worker.close();
        }
      }));

    test('a hand-off the session never took is claimed again under a new epoch, fencing its first taker', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const first = await openAnother();
        const second = await openAnother();
        try {
          const session = await givenSession(first);
          assert.equal(await first.jobs.claimNext({ session: session.id, waitMs: WAIT }), null);
          const { job } = await store.jobs.enqueue({ key: 'k' });
          assert.deepEqual([job.status, job.epoch], ['claimed', 1]);
          // The process that waited is gone before it looked; a new one claims for the session.
          const again = await second.jobs.claimNext({ session: session.id, start: true });
          assert.deepEqual([again?.id, again?.epoch, again?.status], [job.id, 2, 'running']);
          const rows = await ledgerOf(store, job.id);
          // Given back and claimed again in one step: running → queued → claimed, as the ledger says.
          assert.deepEqual(rows.at(-2), {
            type: 'job:requeued',
            session: session.id,
            epoch: 1,
            detail: { reason: 'hand-off not taken', attempt: 0 },
          });
          assert.deepEqual(rows.at(-1), {
            type: 'job:claimed',
            session: session.id,
            epoch: 2,
            detail: { attempt: 1, host: 'host-a', started: true, recovered: true },
          });
          // The first process finds no hand-off left, and its epoch is fenced.
          assert.equal(await first.jobs.claimNext({ session: session.id }), null);
          const fenced = await first.jobs.finish({
            id: job.id,
            session: session.id,
            epoch: 1,
            status: 'done',
          });
          assert.equal(fenced.ok, false);
          const done = await second.jobs.finish({
            id: job.id,
            session: session.id,
            epoch: 2,
            status: 'done',
          });
          assert.equal(done.ok, true);
        } finally {
          await first.close();
          await second.close();
        }
      }));

    test('no hand-off without a wait, after the wait ended, to an ended session or for a gated task', () =>
      withFixture(harness, async ({ store }) => {
        const plain = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: plain.id }), null);
        assert.equal((await store.jobs.enqueue({ key: 'a' })).job.status, 'queued');
        assert.equal((await store.jobs.claimNext({ session: plain.id }))?.key, 'a');

        const brief = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: brief.id, waitMs: 1 }), null);
        await sleep(30);
        assert.equal((await store.jobs.enqueue({ key: 'b' })).job.status, 'queued');

        // A wait ends with the next call that does not wait.
        const stopped = await givenSession(store);
        assert.equal(
          (await store.jobs.claimNext({ session: stopped.id, waitMs: WAIT }))?.key,
          'b',
          'a waiting claim still takes a due job first',
        );
        assert.equal(await store.jobs.claimNext({ session: stopped.id, waitMs: WAIT }), null);
        assert.equal(await store.jobs.claimNext({ session: stopped.id }), null);
        assert.equal((await store.jobs.enqueue({ key: 'c' })).job.status, 'queued');
        await store.jobs.cancel({ id: (await store.jobs.list({ key: 'c' }))[0]?.id ?? 0 });

        const ended = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: ended.id, waitMs: WAIT }), null);
        await store.sessions.end(ended.id);
        const { job: forEnded } = await store.jobs.enqueue({ key: 'd' });
        assert.equal(forEnded.status, 'queued');
        await store.jobs.cancel({ id: forEnded.id });

        const { job: gatedJob } = await store.jobs.enqueue({ key: 'g' }); // queued: nobody waits
        await store.lifecycle.gate({ key: 'g', gate: 'design', by: { name: 'alice@box' } });
        await store.jobs.cancel({ id: gatedJob.id });
        const gatedWaiter = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: gatedWaiter.id, waitMs: WAIT }), null);
        const { job: gated } = await store.jobs.enqueue({ key: 'g' });
        assert.deepEqual([gated.status, gated.session], ['queued', null]);
        // The waiter still waits, and takes the next job that may run.
        const { job: open } = await store.jobs.enqueue({ key: 'e' });
        assert.equal(open.session, gatedWaiter.id);
      }));

    test("a hand-off is one insert, as the outbox of a GitHub task's job shows on both engines", () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT }), null);
        const key = 'github:acme/api#7';
        const { job } = await store.jobs.enqueue({ key });
        assert.equal(job.status, 'running');
        const causes = (await store.github.pending({ limit: 100, key })).map(
          (row) => `${row.kind} ${row.cause}`,
        );
        assert.deepEqual(causes, ['labels task:open', 'labels job:running']);
      }));

    test('two takers for one session (two processes, or one server answering two calls): one gets the hand-off', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const first = await openAnother();
        const second = await openAnother();
        try {
          const session = await givenSession(store);
          for (const taker of [first, second]) {
            assert.equal(
              await taker.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT }),
              null,
            );
          }
          const { job } = await store.jobs.enqueue({ key: 'k' });
          assert.equal(job.session, session.id);
          const taken = await Promise.all(
            [first, second].map((taker) => taker.jobs.claimNext({ session: session.id, start: true })),
          );
          assert.deepEqual(
            taken.map((got) => (got === null ? null : [got.id, got.epoch])).sort(),
            [[job.id, 1], null].sort(),
          );
          assert.equal((await store.jobs.get(job.id))?.epoch, 1);
        } finally {
          await first.close();
          await second.close();
        }
      }));

    test('a hand-off taken back once its task is gated goes back to the queue, claimed by no one', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const gone = await openAnother();
        const session = await givenSession(store);
        assert.equal(await gone.jobs.claimNext({ session: session.id, waitMs: WAIT }), null);
        await gone.close();
        const { job } = await store.jobs.enqueue({ key: 'g' });
        await store.lifecycle.gate({ key: 'g', gate: 'design', by: { name: 'alice@box' } });
        assert.equal(await store.jobs.claimNext({ session: session.id }), null);
        const back = await store.jobs.get(job.id);
        assert.deepEqual([back?.status, back?.session, back?.epoch, back?.attempt], ['queued', null, 1, 0]);
        assert.deepEqual((await ledgerOf(store, job.id)).at(-1), {
          type: 'job:requeued',
          session: session.id,
          epoch: 1,
          detail: { reason: 'hand-off not taken', attempt: 0 },
        });
        await assert.rejects(
          store.jobs.claimNext({ session: session.id, waitMs: 1.5 }),
          /waitMs must be a whole/,
        );
      }));

    test('enqueues at once hand at most one job to each waiting session, each taken by its own', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const worker = await openAnother();
        try {
          const sessions = [await givenSession(worker), await givenSession(worker, 'host-b')];
          for (const session of sessions) {
            assert.equal(await worker.jobs.claimNext({ session: session.id, waitMs: WAIT }), null);
          }
          const results = await Promise.all(
            ['k1', 'k2', 'k3', 'k4', 'k5'].map((key) => store.jobs.enqueue({ key })),
          );
          const handed = results.map((result) => result.job).filter((job) => job.session !== null);
          assert.ok(handed.length >= 1, 'at least one enqueue found a waiting session');
          const holders = handed.map((job) => job.session);
          assert.equal(new Set(holders).size, holders.length, 'no session was handed two jobs');
          for (const job of handed) {
            const taken = await worker.jobs.claimNext({ session: job.session ?? 0 });
            assert.deepEqual([taken?.id, taken?.epoch, taken?.host], [job.id, 1, job.host]);
          }
          const queued = await store.jobs.list({ status: ['queued'] });
          assert.equal(queued.length, 5 - handed.length);
        } finally {
          await worker.close();
        }
      }));
  });
}
