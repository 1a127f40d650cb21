import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

/** A job running under a runner session, its agent attached under a session of its own. */
async function givenRunning(store: Store, key = 't') {
  const runner = await givenSession(store, 'box-1');
  const agent = await givenSession(store, 'box-1');
  await store.jobs.enqueue({ key });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  assert.ok(job !== null);
  const guard = { id: job.id, session: runner.id, epoch: job.epoch };
  const attached = await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 4242 });
  assert.ok(attached.ok);
  return { job, guard, runner: runner.id, agent: agent.id };
}

export function exerciseProgress(harness: Harness): void {
  describe('progress', () => {
    test("adds each mark to the session's counters and stamps the last mark with the database time", () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        assert.equal(await store.progress.get(session.id), null);
        const before = await store.now();
        const first = await store.progress.mark({ session: session.id, outputBytes: 120, note: 'output' });
        assert.ok(first.ok);
        assert.equal(first.unstalled, null);
        const second = await store.progress.mark({
          session: session.id,
          toolCalls: 1,
          filesChanged: 2,
          note: 'tool Edit',
        });
        const third = await store.progress.mark({ session: session.id, commits: 1, effects: 3 });
        assert.ok(second.ok && third.ok);
        const progress = await store.progress.get(session.id);
        assert.deepEqual(progress, third.progress);
        assert.equal(progress?.session, session.id);
        assert.deepEqual(
          [
            progress?.outputBytes,
            progress?.filesChanged,
            progress?.commits,
            progress?.effects,
            progress?.toolCalls,
          ],
          [120, 2, 1, 3, 1],
        );
        assert.equal(progress?.note, 'tool Edit', 'a mark without a note keeps the last one');
        assert.equal(progress?.stalledAt, null);
        assert.ok(progress?.lastAt !== null && progress?.lastAt !== undefined && progress.lastAt >= before);
        assert.ok(progress.lastAt >= (second.progress.lastAt ?? 0));
        const other = await givenSession(store);
        assert.deepEqual(await store.progress.list([session.id, other.id, 999_999]), [progress]);
        assert.deepEqual(await store.progress.list([]), []);
        assert.equal(
          (await store.audit.list({ type: 'job:unstalled' })).length,
          0,
          'marks are not in the ledger',
        );
      }));

    test('refuses a mark from an ended session or an unknown one, and a mark that counts nothing', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await assert.rejects(store.progress.mark({ session: session.id }), InvalidInputError);
        await assert.rejects(store.progress.mark({ session: session.id, toolCalls: -1 }), InvalidInputError);
        await assert.rejects(store.progress.mark({ session: session.id, toolCalls: 1.5 }), InvalidInputError);
        await assert.rejects(store.progress.mark({ session: 999_999, toolCalls: 1 }), NotFoundError);
        await store.sessions.end(session.id);
        assert.deepEqual(await store.progress.mark({ session: session.id, toolCalls: 1 }), {
          ok: false,
          reason: 'fenced',
        });
        assert.equal(await store.progress.get(session.id), null);
      }));

    test('marks a running job stalled once, with its last progress, and audits it in the same step', () =>
      withFixture(harness, async ({ store }) => {
        const { job, guard, runner, agent } = await givenRunning(store);
        assert.deepEqual(await store.progress.markStalled({ ...guard, stallAfterMs: 3_600_000 }), {
          stalled: false,
          reason: 'progressing',
        });
        const started = (await store.jobs.get(job.id))?.startedAt ?? 0;
        const stalled = await store.progress.markStalled({ ...guard, stallAfterMs: 0 });
        assert.deepEqual(stalled, { stalled: true, lastProgressAt: started });
        assert.deepEqual(await store.progress.markStalled({ ...guard, stallAfterMs: 0 }), {
          stalled: false,
          reason: 'already',
        });
        const record = await store.progress.get(agent);
        assert.ok(record?.stalledAt !== null && record?.stalledAt !== undefined);
        assert.equal(record.lastAt, null, 'a stall is not a mark');
        const rows = await store.audit.list({ type: 'job:stalled' });
        assert.equal(rows.length, 1);
        assert.equal(rows[0]?.jobId, job.id);
        assert.equal(rows[0]?.key, 't');
        assert.equal(rows[0]?.session, runner);
        assert.equal(rows[0]?.epoch, job.epoch);
        assert.equal(rows[0]?.at, record.stalledAt);
        assert.deepEqual(rows[0]?.detail, { agentSession: agent, lastProgressAt: started, stallAfterMs: 0 });
      }));

    test('a mark clears the stall and audits it; the run is judged from that mark on', () =>
      withFixture(harness, async ({ store }) => {
        const { job, guard, agent } = await givenRunning(store);
        assert.ok((await store.progress.markStalled({ ...guard, stallAfterMs: 0 })).stalled);
        const marked = await store.progress.mark({ session: agent, outputBytes: 10, note: 'output' });
        assert.ok(marked.ok);
        assert.equal(marked.unstalled, job.id);
        assert.equal(marked.progress.stalledAt, null);
        const again = await store.progress.mark({ session: agent, outputBytes: 10 });
        assert.ok(again.ok && again.unstalled === null, 'only the mark that cleared it says so');
        const rows = await store.audit.list({ type: 'job:unstalled' });
        assert.equal(rows.length, 1);
        assert.equal(rows[0]?.jobId, job.id);
        assert.equal(rows[0]?.session, agent);
        assert.equal(rows[0]?.detail['note'], 'output');
        assert.equal(typeof rows[0]?.detail['stalledAt'], 'number');
        assert.deepEqual(await store.progress.markStalled({ ...guard, stallAfterMs: 3_600_000 }), {
          stalled: false,
          reason: 'progressing',
        });
        const restalled = await store.progress.markStalled({ ...guard, stallAfterMs: 0 });
        assert.deepEqual(restalled, { stalled: true, lastProgressAt: again.progress.lastAt });
      }));

    test('two marks racing on a stalled run clear it once', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        const { guard, agent } = await givenRunning(store);
        const other = await openAnother();
        try {
          for (let round = 0; round < 5; round++) {
            assert.ok((await store.progress.markStalled({ ...guard, stallAfterMs: 0 })).stalled);
            const results = await Promise.all([
              store.progress.mark({ session: agent, toolCalls: 1 }),
              other.progress.mark({ session: agent, outputBytes: 1 }),
            ]);
            const cleared = results.filter((result) => result.ok && result.unstalled !== null);
            assert.equal(cleared.length, 1, `round ${round}`);
          }
          assert.equal((await store.audit.list({ type: 'job:unstalled' })).length, 5);
          const progress = await store.progress.get(agent);
          assert.deepEqual([progress?.toolCalls, progress?.outputBytes], [5, 5]);
        } finally {
          await other.close();
        }
      }));

    test('refuses to judge a run under another epoch or session, not running, or not yet attached', () =>
      withFixture(harness, async ({ store }) => {
        const { job, guard } = await givenRunning(store);
        const lost = { stalled: false, reason: 'lost' };
        assert.deepEqual(
          await store.progress.markStalled({ ...guard, epoch: guard.epoch + 1, stallAfterMs: 0 }),
          lost,
        );
        assert.deepEqual(
          await store.progress.markStalled({ ...guard, session: 999_999, stallAfterMs: 0 }),
          lost,
        );
        const spare = await givenSession(store, 'box-2');
        await store.jobs.enqueue({ key: 'u' });
        const unattached = await store.jobs.claimNext({ session: spare.id, start: true });
        assert.ok(unattached !== null);
        const g2 = { id: unattached.id, session: spare.id, epoch: unattached.epoch, stallAfterMs: 0 };
        assert.deepEqual(await store.progress.markStalled(g2), lost);
        await store.jobs.finish({ ...guard, status: 'done' });
        assert.deepEqual(await store.progress.markStalled({ ...guard, stallAfterMs: 0 }), lost);
        assert.equal((await store.audit.list({ type: 'job:stalled' })).length, 0);
        assert.equal((await store.jobs.get(job.id))?.status, 'done');
      }));
  });
}
