/**
 * stats()' running counts after job retention (docs/decisions/0040, migration 0038): a batch
 * logs the jobs it removed and leaves the jobs mark, and a store subtracts the batch from its kept
 * counts instead of counting the jobs again; a batch that may have removed a job the store keeps
 * as live, a log trimmed past what a store saw, and any other delete of jobs make it count again.
 * Each step compares stats() with the rows (observe-totals.ts' `exact`, two reads a settle apart).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobId } from '../../core/job.js';
import type { Store } from '../store.js';
import { withFixture, type Fixture, type Harness } from './harness.js';
import { exact } from './observe-totals.js';

const DAY = 86_400_000;

/** The task `key`'s jobs: `count - 1` cancelled, each retried, the last one left queued. */
async function cancelled(store: Store, key: string, count: number): Promise<JobId[]> {
  let { job } = await store.jobs.enqueue({ key });
  const ids = [job.id];
  for (let index = 1; index < count; index++) {
    assert.ok((await store.jobs.cancel({ id: job.id })).ok);
    ({ job } = await store.jobs.retry({ id: job.id }));
    ids.push(job.id);
  }
  return ids;
}

async function jobsMark({ raw }: Fixture): Promise<number> {
  return Number((await raw.exec(`SELECT n FROM stats_marks WHERE tbl = 'jobs'`))[0]?.['n']);
}

async function prune(store: Store, limit: number, removed: number): Promise<void> {
  const result = await store.retention.pruneJobs({ olderThanMs: DAY, limit });
  assert.ok(result.ok && result.removed === removed, JSON.stringify(result));
}

export function exerciseObserveRetention(harness: Harness): void {
  describe("stats' running counts after job retention", () => {
    test("subtract retention's batches, leaving the jobs mark; count again when a batch raced them", () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const [newest] = await cancelled(store, 'k', 1); // cancelled but its task's newest: it stays
        assert.ok(newest !== undefined && (await store.jobs.cancel({ id: newest })).ok);
        await cancelled(store, 'a', 4); // three cancelled, the fourth queued
        await exact(fixture, 'four cancelled jobs and a queued one');
        const mark = await jobsMark(fixture);
        await fixture.moveClock(2 * DAY);
        await prune(store, 2, 2);
        await exact(fixture, 'a batch of two old jobs removed');
        await prune(store, 10, 1);
        await exact(fixture, 'a second batch removed the third');
        assert.equal(await jobsMark(fixture), mark, "retention's deletes moved the jobs mark");
        // The store keeps `raced` as a live job; it ends and goes before the store reads again.
        const [raced] = await cancelled(store, 'r', 1);
        await exact(fixture, 'a queued job kept as live');
        assert.ok(raced !== undefined && (await store.jobs.cancel({ id: raced })).ok);
        await store.jobs.retry({ id: raced });
        await fixture.moveClock(2 * DAY);
        await prune(store, 10, 1);
        await exact(fixture, 'a batch removed a job the counts kept as live');
      }));

    test('count again after a log trimmed past what the store saw, and after any other delete of jobs', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const ids = await cancelled(store, 'a', 4);
        await exact(fixture, 'three cancelled jobs and a queued one');
        await fixture.moveClock(2 * DAY);
        await prune(store, 1, 1);
        // As if a thousand batches had been logged and trimmed since the store last read.
        await fixture.raw.exec('DELETE FROM stats_pruned');
        await fixture.raw.exec('UPDATE stats_retention SET dropped = seq');
        await exact(fixture, 'a batch trimmed out of the log before the store saw it');
        const mark = await jobsMark(fixture);
        await fixture.raw.exec(`DELETE FROM jobs WHERE id = ${fixture.param(1)}`, [ids[1]]);
        assert.equal(await jobsMark(fixture), mark + 1, 'a delete outside retention moves the jobs mark');
        await exact(fixture, 'a cancelled job deleted outside retention');
      }));

    test('subtract a batch rather than count again: a change no mark sees stays unseen', () =>
      withFixture(harness, async (fixture) => {
        const store = await fixture.clocked();
        const ids = await cancelled(store, 'a', 4); // three cancelled, the fourth queued
        await exact(fixture, 'three cancelled jobs and a queued one');
        // Changed by hand: no mark moves, so only a store that counts again from 0 would see it.
        await fixture.raw.exec(`UPDATE jobs SET status = 'failed' WHERE id = ${fixture.param(1)}`, [ids[2]]);
        await fixture.moveClock(2 * DAY);
        await prune(store, 1, 1); // the oldest cancelled one
        const byStatus = Object.fromEntries(
          (await store.observe.stats()).jobsByStatus.map((group) => [group.name, group.count]),
        );
        assert.equal(byStatus['cancelled'], 2, JSON.stringify(byStatus));
        assert.equal(
          byStatus['failed'] ?? 0,
          0,
          `the batch was subtracted, not counted again: ${JSON.stringify(byStatus)}`,
        );
      }));
  });
}
