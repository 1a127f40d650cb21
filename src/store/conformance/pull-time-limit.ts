/**
 * A pull-mode finish held to the job's own time limit (decision 0037, "Pull mode in one
 * transaction"): progress.failTimedOut writes the `job:timed_out` row and the failing finish
 * together or not at all, and each member of a batch is held to its own limit, alone.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, ledgerTypes, withFixture, type Harness } from './harness.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The job's ledger types in order. */
export function exercisePullTimeLimit(harness: Harness): void {
  describe('pull time limit', () => {
    test("a finish past the job's own limit: its job:timed_out row and its failing finish in one step", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'limited', timeLimitMs: 60_000 });
        await store.jobs.enqueue({ key: 'plain' });
        const job = await store.jobs.claimNext({ session: worker.id, start: true });
        const plain = await store.jobs.claimNext({ session: worker.id, start: true });
        assert.ok(job !== null && job.key === 'limited' && plain !== null);
        const finish = { id: job.id, session: worker.id, epoch: job.epoch, status: 'done' as const };
        const said = { ...finish, exitCode: 0, reason: 'all good' };
        assert.deepEqual(await store.progress.failTimedOut(said), { timedOut: false, reason: 'within' });
        await moveClock(61_000);
        const none = { ...finish, id: plain.id, epoch: plain.epoch };
        assert.deepEqual(await store.progress.failTimedOut(none), { timedOut: false, reason: 'none' });
        assert.deepEqual(await store.progress.failTimedOut({ ...said, epoch: job.epoch + 1 }), {
          timedOut: false,
          reason: 'lost',
        });
        assert.deepEqual(await ledgerTypes(store, job.id), ['job:enqueued', 'job:claimed']);
        const verdict = await store.progress.failTimedOut(said);
        assert.ok(verdict.timedOut && verdict.finished.ok, 'timed out and failed in the same step');
        assert.equal(verdict.first, true);
        assert.equal(verdict.limitMs, 60_000);
        assert.equal(verdict.startedAt, job.startedAt);
        const failed = verdict.finished.job;
        assert.equal(failed.status, 'failed');
        assert.equal(failed.exitCode, 0);
        const started = new Date(job.startedAt ?? 0).toISOString();
        assert.equal(
          failed.reason,
          `timed out: ran past its time limit of 60 s (started ${started}); the worker said done: all good`,
        );
        assert.deepEqual(await store.jobs.get(job.id), failed);
        assert.deepEqual(await ledgerTypes(store, job.id), [
          'job:enqueued',
          'job:claimed',
          'job:timed_out',
          'job:finished',
        ]);
        const [finished] = await store.audit.list({ jobId: job.id, type: 'job:finished' });
        assert.equal(finished?.detail['status'], 'failed');
        // The run has ended: a second ask finds no run of this epoch and writes nothing.
        assert.deepEqual(await store.progress.failTimedOut(said), { timedOut: false, reason: 'lost' });
        assert.equal((await store.audit.list({ jobId: job.id, type: 'job:timed_out' })).length, 1);
        assert.equal((await store.jobs.get(plain.id))?.status, 'running', 'the job without a limit runs on');
      }));

    test('a finish after the runner check audited the epoch: failed, and the row not written twice', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'limited', timeLimitMs: 1_000 });
        const job = await store.jobs.claimNext({ session: worker.id, start: true });
        assert.ok(job !== null);
        await moveClock(2_000);
        const guard = { id: job.id, session: worker.id, epoch: job.epoch };
        assert.ok((await store.progress.markTimedOut({ ...guard, defaultLimitMs: null })).timedOut);
        const verdict = await store.progress.failTimedOut({ ...guard, status: 'failed', reason: 'boom' });
        assert.ok(verdict.timedOut && verdict.finished.ok);
        assert.equal(verdict.first, false);
        assert.match(
          verdict.finished.job.reason ?? '',
          /of 1 s \(started .*\); the worker said failed: boom$/,
        );
        assert.equal((await store.audit.list({ jobId: job.id, type: 'job:timed_out' })).length, 1);
      }));

    test('a batch member past its own limit fails timed out alone; the others finish as asked', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const worker = await givenSession(store, 'box-1');
        await store.jobs.enqueue({ key: 'short', timeLimitMs: 60_000 });
        await store.jobs.enqueue({ key: 'plain' });
        await store.jobs.enqueue({ key: 'long', timeLimitMs: 3_600_000 });
        const taken = await store.jobs.batch({ session: worker.id, take: 3, leaseMs: 600_000 });
        assert.deepEqual(
          taken.taken.map((job) => job.key),
          ['short', 'plain', 'long'],
        );
        await moveClock(61_000);
        const result = await store.jobs.batch({
          session: worker.id,
          finish: taken.taken.map((job) => ({ id: job.id, epoch: job.epoch, status: 'done', exitCode: 0 })),
        });
        const [short, plain, long] = result.finished;
        assert.ok(short?.ok && plain?.ok && long?.ok, 'every member finished');
        assert.equal(short.job.status, 'failed');
        const started = new Date(taken.taken[0]?.startedAt ?? 0).toISOString();
        assert.match(started, ISO);
        assert.equal(
          short.job.reason,
          `timed out: ran past its time limit of 60 s (started ${started}); the worker said done`,
        );
        assert.deepEqual([plain.job.status, long.job.status], ['done', 'done']);
        // Scripts are told which member timed out; the others' answers are as before.
        assert.equal('timedOut' in short && short.timedOut, true);
        assert.deepEqual(
          [plain, long].map((member) => 'timedOut' in member),
          [false, false],
        );
        assert.deepEqual([plain.job.reason, long.job.reason], [null, null]);
        assert.deepEqual(await ledgerTypes(store, short.job.id), [
          'job:enqueued',
          'job:claimed',
          'job:timed_out',
          'job:finished',
        ]);
        const [row] = await store.audit.list({ jobId: short.job.id, type: 'job:timed_out' });
        assert.equal(row?.epoch, short.job.epoch);
        assert.deepEqual(
          [row?.detail['limitMs'], row?.detail['startedAt'], row?.detail['own']],
          [60_000, taken.taken[0]?.startedAt, true],
        );
        assert.ok(Number(row?.detail['ranMs']) >= 61_000);
        const [finished] = await store.audit.list({ jobId: short.job.id, type: 'job:finished' });
        assert.equal(finished?.detail['status'], 'failed');
        for (const other of [plain.job, long.job])
          assert.equal((await store.audit.list({ jobId: other.id, type: 'job:timed_out' })).length, 0);
        assert.equal((await store.tasks.get('short'))?.state, 'open', 'its task is not finished');
        assert.equal((await store.tasks.get('plain'))?.state, 'done');
      }));
  });
}
