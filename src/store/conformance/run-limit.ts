/**
 * The run time limit (docs/decisions/0037-run-time-limit.md): a job's own limit is stored with it
 * and returned by every read, kept by a retry, and judged by progress.markTimedOut against the
 * run's start on the database clock (moved here by the shared test clock, never slept for).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

/** A job queued with this limit (or none) and started by a runner session. */
async function givenRunning(store: Store, key: string, timeLimitMs: number | null) {
  const runner = await givenSession(store, 'box-1');
  await store.jobs.enqueue({ key, timeLimitMs });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  assert.ok(job !== null && job.key === key);
  return { job, guard: { id: job.id, session: runner.id, epoch: job.epoch } };
}

export function exerciseRunLimit(harness: Harness): void {
  describe('run time limit', () => {
    test("stores a job's own limit and returns it on every read; a retry keeps it; none is null", () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'limited', timeLimitMs: 90_000 });
        assert.equal(job.timeLimitMs, 90_000);
        assert.equal((await store.jobs.get(job.id))?.timeLimitMs, 90_000);
        assert.equal((await store.jobs.list({ key: 'limited' }))[0]?.timeLimitMs, 90_000);
        const [enqueued] = await store.audit.list({ jobId: job.id, type: 'job:enqueued' });
        assert.equal(
          enqueued?.detail['timeLimitMs'],
          90_000,
          'the ledger says what limit it was queued with',
        );
        const { job: plain } = await store.jobs.enqueue({ key: 'plain' });
        assert.equal(plain.timeLimitMs, null);
        const [plainRow] = await store.audit.list({ jobId: plain.id, type: 'job:enqueued' });
        assert.equal(plainRow?.detail['timeLimitMs'], undefined);
        const runner = await givenSession(store, 'box-1');
        const claimed = await store.jobs.claimNext({ session: runner.id, start: true });
        assert.equal(claimed?.id, job.id, 'queued first');
        assert.equal(claimed.timeLimitMs, 90_000, 'claimed with it');
        const guard = { id: job.id, session: runner.id, epoch: claimed.epoch };
        assert.ok((await store.jobs.finish({ ...guard, status: 'failed', reason: 'timed out' })).ok);
        const retried = await store.jobs.retry({ id: job.id });
        assert.ok(retried.created);
        assert.equal(retried.job.timeLimitMs, 90_000, 'a retry runs under the same limit');
      }));

    test('judges the limit against the start on the database clock, audits it once, and only for the run', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { job, guard } = await givenRunning(store, 'limited', 60_000);
        const none = { defaultLimitMs: null };
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, ...none }), {
          timedOut: false,
          reason: 'within',
        });
        await moveClock(59_000);
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, defaultLimitMs: 1000 }), {
          timedOut: false,
          reason: 'within',
        });
        await moveClock(2_000);
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, ...none }), {
          timedOut: true,
          startedAt: job.startedAt,
          limitMs: 60_000,
          first: true,
        });
        // Said again (a runner that lost the first answer still kills), audited once.
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, ...none }), {
          timedOut: true,
          startedAt: job.startedAt,
          limitMs: 60_000,
          first: false,
        });
        const rows = await store.audit.list({ jobId: job.id, type: 'job:timed_out' });
        assert.equal(rows.length, 1, 'audited once');
        assert.equal(rows[0]?.epoch, guard.epoch);
        assert.equal(rows[0]?.detail['limitMs'], 60_000);
        assert.equal(rows[0]?.detail['startedAt'], job.startedAt);
        assert.equal(rows[0]?.detail['own'], true);
        assert.ok(Number(rows[0]?.detail['ranMs']) >= 61_000);
        const lost = { timedOut: false, reason: 'lost' };
        assert.deepEqual(
          await store.progress.markTimedOut({ ...guard, ...none, epoch: guard.epoch + 1 }),
          lost,
        );
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, ...none, session: 999_999 }), lost);
        assert.ok((await store.jobs.finish({ ...guard, status: 'failed', reason: 'timed out' })).ok);
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, ...none }), lost, 'an ended job');
      }));

    test('two calls at once past the limit (a retried finish, two runners) audit the epoch once', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const other = await clocked();
        const runs = [];
        for (let index = 0; index < 10; index++)
          runs.push(await givenRunning(store, `limited-${index}`, 1_000));
        await moveClock(2_000);
        for (const { job, guard } of runs) {
          const params = { ...guard, defaultLimitMs: null };
          const both = await Promise.all([
            store.progress.markTimedOut(params),
            other.progress.markTimedOut(params),
          ]);
          const firsts = both.filter((verdict) => verdict.timedOut && verdict.first).length;
          assert.ok(
            both.every((verdict) => verdict.timedOut),
            'both see it past its limit',
          );
          assert.equal(firsts, 1, `${job.key}: one of the two is told it was first`);
          const rows = await store.audit.list({ jobId: job.id, type: 'job:timed_out' });
          assert.equal(rows.length, 1, `${job.key}: one job:timed_out for the epoch, not ${rows.length}`);
        }
      }));

    test("a job without its own limit is held to the runner's, and to none without one", () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { job, guard } = await givenRunning(store, 'plain', null);
        await moveClock(7 * 86_400_000);
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, defaultLimitMs: null }), {
          timedOut: false,
          reason: 'none',
        });
        assert.deepEqual(await store.progress.markTimedOut({ ...guard, defaultLimitMs: 30_000 }), {
          timedOut: true,
          startedAt: job.startedAt,
          limitMs: 30_000,
          first: true,
        });
        const [row] = await store.audit.list({ jobId: job.id, type: 'job:timed_out' });
        assert.equal(row?.detail['own'], false);
        assert.equal(row?.detail['limitMs'], 30_000);
      }));

    test("a runner's default limit is published with its host row and its host:registered row; none is null", () =>
      withFixture(harness, async ({ store }) => {
        const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
        const runner = () => store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
        const first = await runner();
        const host = await store.hosts.register({
          name: 'box-1',
          session: first.id,
          timeLimitMs: 7_200_000,
          ...capacity,
        });
        assert.equal(host.timeLimitMs, 7_200_000);
        assert.equal((await store.hosts.list())[0]?.timeLimitMs, 7_200_000);
        // The next baton up there without --time-limit: none, not the last one's.
        await store.sessions.end(first.id);
        const second = await runner();
        const again = await store.hosts.register({ name: 'box-1', session: second.id, ...capacity });
        assert.equal(again.timeLimitMs, null);
        assert.equal((await store.hosts.list())[0]?.timeLimitMs, null);
        // Each register's ledger row says the limit it published (null: none), in order.
        const rows = await store.audit.list({ type: 'host:registered' });
        assert.deepEqual(
          [...rows].sort((left, right) => left.id - right.id).map((row) => row.detail['timeLimitMs']),
          [7_200_000, null],
        );
      }));
  });
}
