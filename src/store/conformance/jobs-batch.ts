/**
 * jobs.batch: batch fetch and completion in one step, each job still under its own epoch guard,
 * its own lease and its own ledger rows (docs/decisions/0017).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError } from '../../core/errors.js';
import type { Job } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const LEASE_MS = 60_000;

const trail = (entries: readonly { type: string; jobId: number | null; epoch: number | null }[]) =>
  entries
    .filter((e) => e.type.startsWith('job:') && e.type !== 'job:enqueued')
    .map((e) => [e.type, e.jobId, e.epoch]);

async function queue(store: Store, keys: readonly string[]): Promise<void> {
  for (const [i, key] of keys.entries()) await store.jobs.enqueue({ key, priority: i });
}

const done = (jobs: readonly Job[]) =>
  jobs.map((j) => ({ id: j.id, epoch: j.epoch, status: 'done' as const }));

export function exerciseJobBatch(h: Harness): void {
  describe('batch fetch and completion', () => {
    test('takes up to N due jobs in queue order, each started under its own epoch and lease', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store, 'box-1');
        await queue(store, ['a', 'b', 'c', 'd']);
        const r = await store.jobs.batch({ session: s.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(r.finished, []);
        assert.deepEqual(
          r.taken.map((j) => [j.key, j.status, j.epoch, j.attempt, j.session, j.host]),
          [
            ['a', 'running', 1, 1, s.id, 'box-1'],
            ['b', 'running', 1, 1, s.id, 'box-1'],
            ['c', 'running', 1, 1, s.id, 'box-1'],
          ],
        );
        for (const j of r.taken) {
          assert.deepEqual(await store.jobs.get(j.id), j);
          assert.equal(j.startedAt, j.claimedAt);
          assert.equal(r.leaseUntil, (j.claimedAt ?? 0) + LEASE_MS, 'the lease runs from the claim');
        }
        assert.deepEqual(
          trail(await store.audit.list()),
          r.taken.flatMap((j) => [
            ['job:claimed', j.id, 1],
            ['job:started', j.id, 1],
          ]),
        );
        const rest = await store.jobs.batch({ session: s.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(
          rest.taken.map((j) => j.key),
          ['d'],
        );
        const none = await store.jobs.batch({ session: s.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(none, { finished: [], taken: [], leaseUntil: null });
      }));

    test('finishes every member and takes the next batch in one step, audited member by member', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await queue(store, ['a', 'b', 'c', 'd']);
        const first = await store.jobs.batch({ session: s.id, take: 2, leaseMs: LEASE_MS });
        const mark = (await store.audit.list()).at(-1)?.id ?? 0;
        const r = await store.jobs.batch({
          session: s.id,
          finish: [
            { id: first.taken[0]?.id ?? 0, epoch: 1, status: 'done', exitCode: 0 },
            { id: first.taken[1]?.id ?? 0, epoch: 1, status: 'failed', exitCode: 3, reason: 'boom' },
          ],
          take: 5,
          leaseMs: LEASE_MS,
        });
        assert.deepEqual(
          r.finished.map((f) => [f.ok, f.job?.key, f.job?.status, f.job?.exitCode]),
          [
            [true, 'a', 'done', 0],
            [true, 'b', 'failed', 3],
          ],
        );
        assert.equal((await store.jobs.get(first.taken[1]?.id ?? 0))?.reason, 'boom');
        assert.equal((await store.tasks.get('a'))?.state, 'done', 'a job that ended done finishes its task');
        assert.equal((await store.tasks.get('b'))?.state, 'open');
        assert.deepEqual(
          r.taken.map((j) => j.key),
          ['c', 'd'],
        );
        const [a, b] = first.taken;
        const [c, d] = r.taken;
        const after = await store.audit.list({ afterId: mark });
        assert.deepEqual(trail(after), [
          ['job:finished', a?.id, 1],
          ['job:finished', b?.id, 1],
          ['job:claimed', c?.id, 1],
          ['job:started', c?.id, 1],
          ['job:claimed', d?.id, 1],
          ['job:started', d?.id, 1],
        ]);
        assert.deepEqual(
          after.filter((e) => e.type === 'task:state').map((e) => e.key),
          ['a'],
        );
      }));

    test('a fenced member fails alone: the others commit', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await queue(store, ['a', 'b', 'c', 'd']);
        const { taken } = await store.jobs.batch({ session: s.id, take: 4, leaseMs: LEASE_MS });
        const [a, b, c, d] = taken;
        assert.ok(a && b && c && d);
        await store.jobs.cancel({ id: b.id, actor: 'ops' });
        const members = done([a, b, c, d]).map((m) => (m.id === d.id ? { ...m, epoch: 7 } : m));
        const r = await store.jobs.batch({ session: s.id, finish: members });
        assert.deepEqual(
          r.finished.map((f) => [f.ok, f.job?.status]),
          [
            [true, 'done'],
            [false, 'cancelled'],
            [true, 'done'],
            [false, 'running'],
          ],
        );
        assert.ok(!r.finished[1]?.ok && r.finished[1]?.reason === 'lost');
        assert.deepEqual(await store.jobs.get(d.id), d, 'a wrong epoch changes nothing');
        const finishes = (await store.audit.list({ type: 'job:finished' })).map((e) => e.jobId);
        assert.deepEqual(finishes, [a.id, c.id]);
      }));

    test('a member past its lease is refused, and the next batch gives it back with its epoch fenced', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const s = await givenSession(store);
        const t = await givenSession(store, 'host-b');
        await queue(store, ['a', 'b']);
        // A lease far longer than any pause of a loaded machine between two statements.
        const { taken, leaseUntil } = await store.jobs.batch({ session: s.id, take: 2, leaseMs: 60_000 });
        const [a, b] = taken;
        assert.ok(a && b && leaseUntil !== null);
        await moveClock(50_000);
        const early = await store.jobs.batch({ session: s.id, finish: done([a]) });
        assert.ok(early.finished[0]?.ok, 'within its lease a member finishes');
        await moveClock(20_000);
        const late = await store.jobs.batch({ session: s.id, finish: done([b]) });
        assert.ok(!late.finished[0]?.ok, 'past its lease the holder is fenced');
        assert.equal(late.finished[0]?.job?.status, 'running');
        const alone = await store.jobs.finish({ id: b.id, session: s.id, epoch: b.epoch, status: 'done' });
        assert.equal(alone.ok, false, 'a plain finish is held to the same lease');
        const giveBack = await store.jobs.batch({ session: t.id, take: 5, leaseMs: 60_000 });
        assert.deepEqual(giveBack.taken, [], 'a job given back goes to a later batch');
        const back = await store.jobs.get(b.id);
        assert.equal(back?.status, 'queued');
        assert.equal(back?.session, null);
        const requeued = await store.audit.list({ jobId: b.id, type: 'job:requeued' });
        assert.deepEqual(
          requeued.map((e) => [e.session, e.epoch, e.detail]),
          [[s.id, 1, { reason: 'lease expired', attempt: 1 }]],
        );
        const again = await store.jobs.batch({ session: t.id, take: 5, leaseMs: 60_000 });
        assert.deepEqual(
          again.taken.map((j) => [j.id, j.epoch, j.session]),
          [[b.id, 2, t.id]],
        );
        const stale = await store.jobs.batch({ session: s.id, finish: done([b]) });
        assert.ok(!stale.finished[0]?.ok, 'the old epoch stays fenced');
        const fresh = await store.jobs.batch({ session: t.id, finish: done(again.taken) });
        assert.ok(fresh.finished[0]?.ok);
      }));

    test('a job whose lease passed on its last attempt is failed, not given back', () =>
      withFixture(h, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const s = await givenSession(store);
        await store.jobs.enqueue({ key: 'once', attemptMax: 1 });
        const { taken } = await store.jobs.batch({ session: s.id, take: 1, leaseMs: 1_000 });
        await moveClock(1_500);
        await store.jobs.batch({ session: s.id, take: 1, leaseMs: 1_000 });
        const job = await store.jobs.get(taken[0]?.id ?? 0);
        assert.equal(job?.status, 'failed');
        assert.equal(job?.reason, 'attempts exhausted: lease expired');
      }));

    test('a take by a session that is not live changes nothing, its finishes included', () =>
      withFixture(h, async ({ store }) => {
        const s = await givenSession(store);
        await queue(store, ['a', 'b']);
        const { taken } = await store.jobs.batch({ session: s.id, take: 1, leaseMs: LEASE_MS });
        await store.sessions.end(s.id);
        const before = { audit: await store.audit.list(), jobs: await store.jobs.list() };
        await assert.rejects(
          store.jobs.batch({ session: s.id, finish: done(taken), take: 1, leaseMs: LEASE_MS }),
          FencedError,
        );
        assert.deepEqual({ audit: await store.audit.list(), jobs: await store.jobs.list() }, before);
      }));

    test('two sessions taking batches at once never share a job', () =>
      withFixture(h, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
          await queue(store, keys);
          const s = await givenSession(store);
          const t = await givenSession(other, 'host-b');
          const take = (st: Store, session: number) => st.jobs.batch({ session, take: 5, leaseMs: LEASE_MS });
          const rs = await Promise.all([take(store, s.id), take(other, t.id), take(store, s.id)]);
          const ids = rs.flatMap((r) => r.taken.map((j) => j.id));
          assert.equal(new Set(ids).size, ids.length, 'no job in two batches');
          const running = await store.jobs.list({ status: ['running'] });
          assert.equal(running.length, ids.length);
          assert.ok(running.every((j) => j.epoch === 1));
        } finally {
          await other.close();
        }
      }));
  });
}
