/**
 * jobs.list (store/job-list.ts): the busiest states first, running, claimed and queued, those in
 * queue order; then the finished jobs, newest first. Read in parts (by state) and merged, so
 * these cases cross the parts' borders: the order across them, a limit that cuts one, filters
 * that leave some out, and one task's jobs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

/** f1 done, f2 failed, f3 cancelled (oldest first), r1 running, c1 claimed; q1-q3 queued by priority. */
async function givenMixedQueue(store: Store): Promise<Record<string, Job>> {
  for (const key of ['f1', 'f2', 'f3']) await store.jobs.enqueue({ key, priority: 1 });
  await store.jobs.enqueue({ key: 'r1', priority: 2 });
  await store.jobs.enqueue({ key: 'c1', priority: 3 });
  const session = await givenSession(store, 'box-1');
  const taken: Record<string, Job> = {};
  for (let index = 0; index < 5; index++) {
    const job = await store.jobs.claimNext({ session: session.id, host: 'box-1' });
    assert.ok(job !== null);
    taken[job.key] = job;
  }
  for (const [key, status] of [
    ['f1', 'done'],
    ['f2', 'failed'],
    ['r1', null],
  ] as const) {
    const job = taken[key];
    assert.ok(job !== undefined);
    const guard = { id: job.id, session: session.id, epoch: job.epoch };
    await store.jobs.start(guard);
    if (status !== null) await store.jobs.finish({ ...guard, status });
  }
  await store.jobs.cancel({ id: taken['f3']?.id ?? 0 });
  // Queued later than the others but first in queue order (priority 50), then two at 100 by time.
  const q2 = (await store.jobs.enqueue({ key: 'q2', priority: 100 })).job;
  const q3 = (await store.jobs.enqueue({ key: 'q3', priority: 100 })).job;
  const q1 = (await store.jobs.enqueue({ key: 'q1', priority: 50 })).job;
  return { ...taken, q1, q2, q3 };
}

const keys = (jobs: readonly Job[]): string[] => jobs.map((job) => job.key);

export function exerciseJobList(harness: Harness): void {
  describe('jobs.list', () => {
    test('lists running, claimed, then queued in queue order, then the finished newest first', () =>
      withFixture(harness, async ({ store }) => {
        await givenMixedQueue(store);
        const all = await store.jobs.list();
        assert.deepEqual(keys(all), ['r1', 'c1', 'q1', 'q2', 'q3', 'f3', 'f2', 'f1']);
        assert.deepEqual(
          all.map((job) => job.status),
          ['running', 'claimed', 'queued', 'queued', 'queued', 'cancelled', 'failed', 'done'],
        );
      }));

    test('a limit cuts the merged list where one sort of every job would, in any part', () =>
      withFixture(harness, async ({ store }) => {
        await givenMixedQueue(store);
        const whole = keys(await store.jobs.list());
        for (let limit = 1; limit <= whole.length + 1; limit++)
          assert.deepEqual(keys(await store.jobs.list({ limit })), whole.slice(0, limit), `limit ${limit}`);
        // Limits inside one part: the first of the queued in queue order, the newest finished.
        const finished = ['done', 'failed', 'cancelled'] as const;
        for (const [status, expected] of [
          [['queued'], ['q1', 'q2', 'q3']],
          [finished, ['f3', 'f2', 'f1']],
          [
            ['claimed', 'running'],
            ['r1', 'c1'],
          ],
        ] as const) {
          for (let limit = 1; limit <= expected.length; limit++) {
            const listed = await store.jobs.list({ status, limit });
            assert.deepEqual(keys(listed), expected.slice(0, limit), `${String(status)}, limit ${limit}`);
          }
        }
      }));

    test('a status filter keeps the order and reads only the states asked for', () =>
      withFixture(harness, async ({ store }) => {
        await givenMixedQueue(store);
        assert.deepEqual(keys(await store.jobs.list({ status: ['queued'] })), ['q1', 'q2', 'q3']);
        assert.deepEqual(keys(await store.jobs.list({ status: ['failed'] })), ['f2']);
        assert.deepEqual(keys(await store.jobs.list({ status: ['done', 'queued'] })), [
          'q1',
          'q2',
          'q3',
          'f1',
        ]);
        assert.deepEqual(keys(await store.jobs.list({ status: ['claimed', 'cancelled'] })), ['c1', 'f3']);
        assert.deepEqual(keys(await store.jobs.list({ status: ['running'], limit: 5 })), ['r1']);
        assert.deepEqual(await store.jobs.list({ status: ['oom_killed'] }), []);
        assert.deepEqual(await store.jobs.list({ status: [] }), [], 'no state asked for: none listed');
      }));

    test("one task's jobs: its active job first, then its finished runs newest first", () =>
      withFixture(harness, async ({ store }) => {
        const jobs = await givenMixedQueue(store);
        const again = (await store.jobs.enqueue({ key: 'f2' })).job;
        const listed = await store.jobs.list({ key: 'f2' });
        assert.deepEqual(
          listed.map((job) => [job.id, job.status]),
          [
            [again.id, 'queued'],
            [jobs['f2']?.id, 'failed'],
          ],
        );
        assert.deepEqual(
          (await store.jobs.list({ key: 'f2', status: ['failed'] })).map((job) => job.id),
          [jobs['f2']?.id],
        );
        assert.deepEqual(await store.jobs.list({ key: 'nobody' }), []);
      }));

    test('the rare finished states (oom_killed, escalated) alone are listed newest first, also before an id', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        const ended: number[] = [];
        for (const [key, status] of [
          ['m1', 'oom_killed'],
          ['d1', 'done'],
          ['m2', 'oom_killed'],
          ['m3', 'oom_killed'],
        ] as const) {
          await store.jobs.enqueue({ key });
          const job = await store.jobs.claimNext({ session: session.id, host: 'box-1', start: true });
          assert.ok(job !== null);
          await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status });
          ended.push(job.id);
        }
        await store.jobs.enqueue({ key: 'q1' });
        assert.deepEqual(keys(await store.jobs.list({ status: ['oom_killed'] })), ['m3', 'm2', 'm1']);
        assert.deepEqual(keys(await store.jobs.list({ status: ['oom_killed', 'escalated'], limit: 2 })), [
          'm3',
          'm2',
        ]);
        assert.deepEqual(keys(await store.jobs.list({ status: ['queued', 'oom_killed'] })), [
          'q1',
          'm3',
          'm2',
          'm1',
        ]);
        assert.deepEqual(keys(await store.jobs.list({ status: ['oom_killed'], before: ended[2] })), ['m1']);
        assert.deepEqual(keys(await store.jobs.list({ status: ['oom_killed', 'done'] })), [
          'm3',
          'm2',
          'd1',
          'm1',
        ]);
        assert.deepEqual(await store.jobs.list({ status: ['escalated'] }), []);
      }));

    test('before an id: only the finished jobs older than it, newest first, page after page', () =>
      withFixture(harness, async ({ store }) => {
        const jobs = await givenMixedQueue(store);
        const id = (key: string): number => jobs[key]?.id ?? 0;
        // f1 < f2 < f3 by id; the live jobs (r1 and c1 older than f3, q1-q3 newer) are never listed.
        assert.deepEqual(keys(await store.jobs.list({ before: id('f3') })), ['f2', 'f1']);
        assert.deepEqual(keys(await store.jobs.list({ before: id('q1') + 1 })), ['f3', 'f2', 'f1']);
        // The next page of a list that stopped at its limit among the finished jobs: before its last.
        const first = await store.jobs.list({ limit: 6 });
        assert.deepEqual(keys(first), ['r1', 'c1', 'q1', 'q2', 'q3', 'f3']);
        assert.deepEqual(keys(await store.jobs.list({ limit: 6, before: first.at(-1)?.id })), ['f2', 'f1']);
        const finished = ['done', 'failed', 'cancelled'] as const;
        const page = await store.jobs.list({ status: finished, limit: 2 });
        assert.deepEqual(keys(page), ['f3', 'f2']);
        assert.deepEqual(
          keys(await store.jobs.list({ status: finished, limit: 2, before: page.at(-1)?.id })),
          ['f1'],
        );
        assert.deepEqual(keys(await store.jobs.list({ before: id('f3'), status: ['failed', 'queued'] })), [
          'f2',
        ]);
        assert.deepEqual(
          await store.jobs.list({ before: id('f3'), status: ['queued'] }),
          [],
          'no finished state',
        );
        assert.deepEqual(await store.jobs.list({ before: id('f1') }), [], 'nothing older than the first');
        assert.deepEqual(keys(await store.jobs.list({ key: 'f2', before: id('f2') + 100 })), ['f2']);
        assert.deepEqual(await store.jobs.list({ key: 'f2', before: id('f2') }), []);
      }));
  });
}
