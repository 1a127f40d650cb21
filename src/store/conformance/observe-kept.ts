/**
 * stats()' running counts persisted in the database (stats_kept, migration 0038, stats-kept.ts):
 * a store that has no counts yet starts from the persisted ones and reads only past them. The
 * figures must stay the rows' (observe-totals.ts' `exact`) when the persisted row is stale (rows
 * added, live ones ended, a retention batch since), was counted under other marks (a delete), or
 * was written by another store; and a new store does start from it (a row altered by hand shows).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobId } from '../../core/job.js';
import type { SessionId } from '../../core/session.js';
import type { Store } from '../store.js';
import { givenSession, givenTask, withFixture, type Fixture, type Harness } from './harness.js';
import { exact } from './observe-totals.js';

const DAY = 86_400_000;

/** Opens another store (another process's), reads its figures against the rows, and closes it. */
async function fresh(fixture: Fixture, what: string): Promise<void> {
  const store = await fixture.openAnother();
  try {
    await exact(fixture, what, store);
  } finally {
    await store.close();
  }
}

async function keptJobs({ raw }: Fixture): Promise<{ through: number; mark: number; counts: string }> {
  const [row] = await raw.exec(`SELECT through, mark, counts FROM stats_kept WHERE tbl = 'jobs'`);
  assert.ok(row !== undefined, 'the jobs counts were persisted');
  return { through: Number(row['through']), mark: Number(row['mark']), counts: String(row['counts']) };
}

/**
 * Three cancelled jobs and a queued one of `a`, one old cancelled job removed by retention, and
 * two tasks claimed by a worker; answers the queued job and the worker.
 */
async function history(fixture: Fixture, store: Store): Promise<{ queued: JobId; worker: SessionId }> {
  let { job } = await store.jobs.enqueue({ key: 'a' });
  for (let index = 0; index < 3; index++) {
    assert.ok((await store.jobs.cancel({ id: job.id })).ok);
    ({ job } = await store.jobs.retry({ id: job.id }));
  }
  await fixture.moveClock(2 * DAY);
  const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 1 });
  assert.ok(pruned.ok && pruned.removed === 1);
  const worker = await givenSession(store);
  for (const key of ['x', 'y']) {
    await givenTask(store, key);
    assert.ok((await store.claims.acquire({ key, session: worker.id })).ok);
  }
  return { queued: job.id, worker: worker.id };
}

export function exerciseObserveKept(harness: Harness): void {
  describe("stats' persisted counts", () => {
    test('a new store starts from them, exact when they are stale, from other marks or from another store', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const { queued, worker } = await history(fixture, store);
        await exact(fixture, 'a history counted from the first rows');
        const first = await keptJobs(fixture);
        assert.ok(
          (await store.jobs.cancel({ id: queued })).ok,
          'a job the persisted counts keep as live ends',
        );
        await store.jobs.enqueue({ key: 'b' });
        assert.ok(
          (await store.claims.release({ key: 'x', session: worker, epoch: 1, outcome: 'released' })).ok,
        );
        await store.lifecycle.transition({ key: 'x', action: 'complete', by: { name: 'ops' } });
        const pruned = await store.retention.pruneJobs({ olderThanMs: DAY, limit: 1 });
        assert.ok(pruned.ok && pruned.removed === 1);
        await fresh(fixture, 'a new store on stale counts: a live job ended, rows added, a batch pruned');
        const [cancelled] = await fixture.raw.exec(`SELECT id FROM jobs WHERE status = 'cancelled'`);
        await fixture.raw.exec(`DELETE FROM jobs WHERE id = ${fixture.param(1)}`, [cancelled?.['id']]);
        await fresh(fixture, 'a new store on counts kept under another mark');
        const second = await keptJobs(fixture);
        assert.ok(second.mark > first.mark, 'the store that counted again persisted its counts');
        await fresh(fixture, 'a new store on counts another store persisted');
      }));

    test('a new store starts from them: a persisted count altered by hand shows', () =>
      withFixture(harness, async (fixture) => {
        const { store, raw, param } = fixture;
        const { job } = await store.jobs.enqueue({ key: 'a' });
        assert.ok((await store.jobs.cancel({ id: job.id })).ok);
        await exact(fixture, 'one cancelled job');
        const kept = await keptJobs(fixture);
        assert.equal(kept.counts, JSON.stringify([['cancelled', 1]]));
        await raw.exec(`UPDATE stats_kept SET counts = ${param(1)} WHERE tbl = 'jobs'`, [
          JSON.stringify([['cancelled', 41]]),
        ]);
        const other = await fixture.openAnother();
        try {
          const stats = await other.observe.stats();
          assert.deepEqual(stats.jobsByStatus, [{ name: 'cancelled', count: 41 }]);
        } finally {
          await other.close();
        }
      }));
  });
}
