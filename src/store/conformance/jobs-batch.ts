/**
 * jobs.batch: batch fetch and completion in one step, each job still under its own epoch guard,
 * its own lease and its own ledger rows (docs/decisions/0017).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, NotFoundError } from '../../core/errors.js';
import type { Job } from '../../core/job.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const LEASE_MS = 60_000;

const trail = (entries: readonly { type: string; jobId: number | null; epoch: number | null }[]) =>
  entries
    .filter((entry) => entry.type.startsWith('job:') && entry.type !== 'job:enqueued')
    .map((entry) => [entry.type, entry.jobId, entry.epoch]);

async function queue(store: Store, keys: readonly string[]): Promise<void> {
  for (const [index, key] of keys.entries()) await store.jobs.enqueue({ key, priority: index });
}

const done = (jobs: readonly Job[]) =>
  jobs.map((job) => ({ id: job.id, epoch: job.epoch, status: 'done' as const }));

export function exerciseJobBatch(harness: Harness): void {
  describe('batch fetch and completion', () => {
    test('takes up to N due jobs in queue order, each started under its own epoch and lease', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        await queue(store, ['a', 'b', 'c', 'd']);
        const result = await store.jobs.batch({ session: session.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(result.finished, []);
        assert.deepEqual(
          result.taken.map((job) => [job.key, job.status, job.epoch, job.attempt, job.session, job.host]),
          [
            ['a', 'running', 1, 1, session.id, 'box-1'],
            ['b', 'running', 1, 1, session.id, 'box-1'],
            ['c', 'running', 1, 1, session.id, 'box-1'],
          ],
        );
        for (const job of result.taken) {
          assert.deepEqual(await store.jobs.get(job.id), job);
          assert.equal(job.startedAt, job.claimedAt);
          assert.equal(result.leaseUntil, (job.claimedAt ?? 0) + LEASE_MS, 'the lease runs from the claim');
        }
        // One ledger row per take, which says the claim started the job (decision 0023).
        const rows = await store.audit.list();
        assert.deepEqual(
          trail(rows),
          result.taken.map((job) => ['job:claimed', job.id, 1]),
        );
        const claims = rows.filter((entry) => entry.type === 'job:claimed');
        assert.deepEqual(
          claims.map((entry) => [entry.detail, entry.at]),
          result.taken.map((job) => [{ attempt: 1, host: 'box-1', started: true }, job.startedAt]),
        );
        const rest = await store.jobs.batch({ session: session.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(
          rest.taken.map((job) => job.key),
          ['d'],
        );
        const none = await store.jobs.batch({ session: session.id, take: 3, leaseMs: LEASE_MS });
        assert.deepEqual(none, { finished: [], taken: [], leaseUntil: null });
      }));

    test('answers each job taken and finished as jobs.get reads it, every field, keys in order', () =>
      withFixture(harness, async ({ store }) => {
        // PostgreSQL sends the answer's numbers packed in one column (postgres/job-packed.ts).
        const session = await givenSession(store, 'box-1');
        await store.jobs.enqueue({
          key: 'full',
          priority: 7,
          ramMb: 512,
          command: 'run "a,b"',
          timeLimitMs: 60_000,
        });
        await store.jobs.enqueue({ key: 'bare' });
        const asRead = (jobs: readonly (Job | null)[]): Promise<(string | undefined)[]> =>
          Promise.all(jobs.map(async (job) => JSON.stringify(await store.jobs.get(job?.id ?? 0))));
        const first = await store.jobs.batch({ session: session.id, take: 2, leaseMs: LEASE_MS });
        const [full, bare] = first.taken;
        assert.ok(full && bare);
        assert.deepEqual([full.ramMb, full.command, full.timeLimitMs], [512, 'run "a,b"', 60_000]);
        assert.deepEqual(
          first.taken.map((job) => JSON.stringify(job)),
          await asRead(first.taken),
        );
        const result = await store.jobs.batch({
          session: session.id,
          finish: [
            {
              id: full.id,
              epoch: full.epoch,
              status: 'failed',
              exitCode: -2,
              reason: 'a, b',
              outputTail: 'x,y',
            },
            { id: bare.id, epoch: bare.epoch, status: 'done' },
          ],
        });
        const finished = result.finished.map((member) => member.job ?? null);
        assert.deepEqual(
          finished.map((job) => [job?.exitCode, job?.reason, job?.outputTail, job?.finishedAt !== null]),
          [
            [-2, 'a, b', 'x,y', true],
            [null, null, null, true],
          ],
        );
        assert.deepEqual(
          finished.map((job) => JSON.stringify(job)),
          await asRead(finished),
        );
      }));

    test('finishes every member and takes the next batch in one step, audited member by member', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await queue(store, ['a', 'b', 'c', 'd']);
        const first = await store.jobs.batch({ session: session.id, take: 2, leaseMs: LEASE_MS });
        const mark = (await store.audit.list()).at(-1)?.id ?? 0;
        const result = await store.jobs.batch({
          session: session.id,
          finish: [
            { id: first.taken[0]?.id ?? 0, epoch: 1, status: 'done', exitCode: 0 },
            { id: first.taken[1]?.id ?? 0, epoch: 1, status: 'failed', exitCode: 3, reason: 'boom' },
          ],
          take: 5,
          leaseMs: LEASE_MS,
        });
        assert.deepEqual(
          result.finished.map((finished) => [
            finished.ok,
            finished.job?.key,
            finished.job?.status,
            finished.job?.exitCode,
          ]),
          [
            [true, 'a', 'done', 0],
            [true, 'b', 'failed', 3],
          ],
        );
        assert.equal((await store.jobs.get(first.taken[1]?.id ?? 0))?.reason, 'boom');
        assert.equal((await store.tasks.get('a'))?.state, 'done', 'a job that ended done finishes its task');
        assert.equal((await store.tasks.get('b'))?.state, 'open');
        assert.deepEqual(
          result.taken.map((job) => job.key),
          ['c', 'd'],
        );
        const [firstJob, secondJob] = first.taken;
        const [thirdJob, fourthJob] = result.taken;
        const after = await store.audit.list({ afterId: mark });
        assert.deepEqual(trail(after), [
          ['job:finished', firstJob?.id, 1],
          ['job:finished', secondJob?.id, 1],
          ['job:claimed', thirdJob?.id, 1],
          ['job:claimed', fourthJob?.id, 1],
        ]);
        // Only a's job ended done: its finish row records the task's move; no task:state row.
        assert.deepEqual(
          after.filter((entry) => entry.type === 'job:finished').map((entry) => [entry.key, entry.detail]),
          [
            ['a', { status: 'done', exitCode: 0, task: { from: 'open', to: 'done' } }],
            ['b', { status: 'failed', exitCode: 3, reason: 'boom' }],
          ],
        );
        assert.ok(after.every((entry) => entry.type !== 'task:state'));
        assert.deepEqual(
          [...new Set(after.map((entry) => `${entry.session ?? '-'} ${entry.host ?? '-'}`))],
          [`${session.id} ${session.host}`],
          'every row names the session and its host',
        );
      }));

    test("each finished member's row records its own task's move: to done, or to review", () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.tasks.add({ key: 'r', title: 'review me', reviewRequired: true });
        await queue(store, ['a', 'r', 'b', 'c']);
        const { taken } = await store.jobs.batch({ session: session.id, take: 4, leaseMs: LEASE_MS });
        const mark = (await store.audit.list()).at(-1)?.id ?? 0;
        const members = done(taken).map((member, index) =>
          index === 2 ? { ...member, status: 'failed' as const, reason: 'the tests failed' } : member,
        );
        await store.jobs.batch({ session: session.id, finish: members });
        const after = await store.audit.list({ afterId: mark });
        assert.deepEqual(
          after.map((entry) => [entry.type, entry.key, entry.detail]),
          [
            ['job:finished', 'a', { status: 'done', exitCode: null, task: { from: 'open', to: 'done' } }],
            [
              'job:finished',
              'r',
              { status: 'done', exitCode: null, task: { from: 'open', to: 'in_review' } },
            ],
            ['job:finished', 'b', { status: 'failed', exitCode: null, reason: 'the tests failed' }],
            ['job:finished', 'c', { status: 'done', exitCode: null, task: { from: 'open', to: 'done' } }],
          ],
        );
        const states = await Promise.all(
          ['a', 'r', 'b', 'c'].map(async (key) => (await store.tasks.get(key))?.state),
        );
        assert.deepEqual(states, ['done', 'in_review', 'open', 'done']);
      }));

    test('a fenced member fails alone: the others commit', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await queue(store, ['a', 'b', 'c', 'd']);
        const { taken } = await store.jobs.batch({ session: session.id, take: 4, leaseMs: LEASE_MS });
        const [first, second, third, fourth] = taken;
        assert.ok(first && second && third && fourth);
        await store.jobs.cancel({ id: second.id, actor: 'ops' });
        const members = done([first, second, third, fourth]).map((member) =>
          member.id === fourth.id ? { ...member, epoch: 7 } : member,
        );
        const result = await store.jobs.batch({ session: session.id, finish: members });
        assert.deepEqual(
          result.finished.map((finished) => [finished.ok, finished.job?.status]),
          [
            [true, 'done'],
            [false, 'cancelled'],
            [true, 'done'],
            [false, 'running'],
          ],
        );
        assert.ok(!result.finished[1]?.ok && result.finished[1]?.reason === 'lost');
        assert.deepEqual(await store.jobs.get(fourth.id), fourth, 'a wrong epoch changes nothing');
        const finishes = (await store.audit.list({ type: 'job:finished' })).map((entry) => entry.jobId);
        assert.deepEqual(finishes, [first.id, third.id]);
      }));

    test('a member past its lease is refused, and the next batch gives it back with its epoch fenced', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const session = await givenSession(store);
        const rival = await givenSession(store, 'host-b');
        await queue(store, ['a', 'b']);
        // A lease far longer than any pause of a loaded machine between two statements.
        const { taken, leaseUntil } = await store.jobs.batch({
          session: session.id,
          take: 2,
          leaseMs: 60_000,
        });
        const [first, second] = taken;
        assert.ok(first && second && leaseUntil !== null);
        await moveClock(50_000);
        const early = await store.jobs.batch({ session: session.id, finish: done([first]) });
        assert.ok(early.finished[0]?.ok, 'within its lease a member finishes');
        await moveClock(20_000);
        const late = await store.jobs.batch({ session: session.id, finish: done([second]) });
        assert.ok(!late.finished[0]?.ok, 'past its lease the holder is fenced');
        assert.equal(late.finished[0]?.job?.status, 'running');
        const alone = await store.jobs.finish({
          id: second.id,
          session: session.id,
          epoch: second.epoch,
          status: 'done',
        });
        assert.equal(alone.ok, false, 'a plain finish is held to the same lease');
        const giveBack = await store.jobs.batch({ session: rival.id, take: 5, leaseMs: 60_000 });
        assert.deepEqual(giveBack.taken, [], 'a job given back goes to a later batch');
        const back = await store.jobs.get(second.id);
        assert.equal(back?.status, 'queued');
        assert.equal(back?.session, null);
        const requeued = await store.audit.list({ jobId: second.id, type: 'job:requeued' });
        assert.deepEqual(
          requeued.map((entry) => [entry.session, entry.epoch, entry.detail]),
          [[session.id, 1, { reason: 'lease expired', attempt: 1 }]],
        );
        const again = await store.jobs.batch({ session: rival.id, take: 5, leaseMs: 60_000 });
        assert.deepEqual(
          again.taken.map((job) => [job.id, job.epoch, job.session]),
          [[second.id, 2, rival.id]],
        );
        const stale = await store.jobs.batch({ session: session.id, finish: done([second]) });
        assert.ok(!stale.finished[0]?.ok, 'the old epoch stays fenced');
        const fresh = await store.jobs.batch({ session: rival.id, finish: done(again.taken) });
        assert.ok(fresh.finished[0]?.ok);
      }));

    test('a member past its lease, given back by the batch that tried to finish it, is answered as given back', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const session = await givenSession(store);
        await queue(store, ['a']);
        const { taken } = await store.jobs.batch({ session: session.id, take: 1, leaseMs: 60_000 });
        await moveClock(61_000);
        const late = await store.jobs.batch({
          session: session.id,
          finish: done(taken),
          take: 1,
          leaseMs: 60_000,
        });
        assert.equal(late.finished[0]?.ok, false);
        assert.equal(late.finished[0]?.job?.status, 'queued', 'the answer is the job as the batch left it');
        assert.deepEqual(late.taken, [], 'a job given back goes to a later batch');
      }));

    test('a job whose lease passed on its last attempt is failed, not given back', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'once', attemptMax: 1 });
        const { taken } = await store.jobs.batch({ session: session.id, take: 1, leaseMs: 1_000 });
        await moveClock(1_500);
        await store.jobs.batch({ session: session.id, take: 1, leaseMs: 1_000 });
        const job = await store.jobs.get(taken[0]?.id ?? 0);
        assert.equal(job?.status, 'failed');
        assert.equal(job?.reason, 'attempts exhausted: lease expired');
      }));

    test('a batch naming a job that does not exist is refused whole and changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await queue(store, ['a', 'b']);
        const { taken } = await store.jobs.batch({ session: session.id, take: 1, leaseMs: LEASE_MS });
        const before = await store.audit.list();
        const jobs = await store.jobs.list();
        const finish = [...done(taken), { id: 999_999, epoch: 1, status: 'done' as const }];
        for (const take of [1, 0]) {
          await assert.rejects(
            store.jobs.batch({ session: session.id, finish, take, leaseMs: LEASE_MS }),
            NotFoundError,
          );
        }
        assert.deepEqual(await store.audit.list(), before);
        assert.deepEqual(await store.jobs.list(), jobs, 'a still running, b still queued');
      }));

    test('a take by a session that is not live changes nothing, its finishes included', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await queue(store, ['a', 'b']);
        const { taken } = await store.jobs.batch({ session: session.id, take: 1, leaseMs: LEASE_MS });
        await store.sessions.end(session.id);
        const before = { audit: await store.audit.list(), jobs: await store.jobs.list() };
        await assert.rejects(
          store.jobs.batch({ session: session.id, finish: done(taken), take: 1, leaseMs: LEASE_MS }),
          FencedError,
        );
        assert.deepEqual({ audit: await store.audit.list(), jobs: await store.jobs.list() }, before);
      }));

    test('two sessions taking batches at once never share a job', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const other = await openAnother();
        try {
          const keys = Array.from({ length: 12 }, (_, index) => `k${index}`);
          await queue(store, keys);
          const session = await givenSession(store);
          const rival = await givenSession(other, 'host-b');
          const take = (st: Store, sessionId: number) =>
            st.jobs.batch({ session: sessionId, take: 5, leaseMs: LEASE_MS });
          const rs = await Promise.all([
            take(store, session.id),
            take(other, rival.id),
            take(store, session.id),
          ]);
          const ids = rs.flatMap((result) => result.taken.map((job) => job.id));
          assert.equal(new Set(ids).size, ids.length, 'no job in two batches');
          const running = await store.jobs.list({ status: ['running'] });
          assert.equal(running.length, ids.length);
          assert.ok(running.every((job) => job.epoch === 1));
        } finally {
          await other.close();
        }
      }));
  });
}
