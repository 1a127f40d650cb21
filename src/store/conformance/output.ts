/**
 * The output stream (output-store.ts, docs/decisions/0029-live-output.md): rows appended by the
 * runner that holds the run, read back from an offset; the window trimmed as a run writes on and
 * shrunk at its last flush; the write fenced by the runner's session and the job's epoch; a later
 * attempt drops the earlier one's rows.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { joinOutput, outputRows, OUTPUT_KEEP_ENDED, OUTPUT_WINDOW } from '../../core/output-stream.js';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';
import type { Store } from '../store.js';

const POLICY = { backoffBaseMs: 1, backoffMaxMs: 1 };

/** A job placed on box-1 and running there: its guard. */
async function givenRunning(store: Store, key = 'k') {
  const { session } = await givenHost(store);
  const term = await givenLeader(store);
  const { job } = await store.jobs.enqueue({ key });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
  assert.ok(placed.ok);
  const guard = { id: job.id, session: session.id, epoch: placed.job.epoch };
  await store.jobs.start(guard);
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
  await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 3 }); // the attempt counts
  return { session: session.id, job: placed.job, term };
}

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');
const run = (
  job: { id: number; attempt: number; epoch: number },
  offset: number,
  bytes: string,
  ended = false,
) => ({
  job: job.id,
  attempt: job.attempt,
  epoch: job.epoch,
  offset,
  bytes: Buffer.from(bytes),
  ended,
});

export function exerciseOutput(harness: Harness): void {
  describe('output stream', () => {
    test('appends a run’s output and reads it back from an offset', () =>
      withFixture(harness, async ({ store }) => {
        const { session, job } = await givenRunning(store);
        const first = await store.output.append({ session, rows: outputRows([run(job, 0, 'one\ntwo\n')]) });
        assert.deepEqual(first, [job.id]);
        await store.output.append({ session, rows: outputRows([run(job, 8, 'three\n')]) });
        const all = await store.output.read({ job: job.id, attempt: 1, offset: 0 });
        assert.equal(all.size, 14);
        assert.equal(text(joinOutput(all, 0, 1 << 20)?.bytes ?? new Uint8Array()), 'one\ntwo\nthree\n');
        const later = await store.output.read({ job: job.id, attempt: 1, offset: 4 });
        const span = joinOutput(later, 4, 1 << 20);
        assert.equal(span?.from, 4);
        assert.equal(text(span?.bytes ?? new Uint8Array()), 'two\nthree\n');
        const past = await store.output.read({ job: job.id, attempt: 1, offset: 14 });
        assert.deepEqual([past.rows.length, past.size], [0, 14]);
        const none = await store.output.read({ job: job.id, attempt: 2, offset: 0 });
        assert.deepEqual([none.rows.length, none.size, none.run], [0, 0, null]);
      }));

    test('answers the stream’s end past the 64 rows one read returns', () =>
      withFixture(harness, async ({ store }) => {
        const { session, job } = await givenRunning(store);
        const line = (at: number): string => `line ${String(at).padStart(3, '0')}\n`; // 9 bytes
        for (let at = 0; at < 100; at++) {
          await store.output.append({ session, rows: outputRows([run(job, at * 9, line(at))]) });
        }
        const first = await store.output.read({ job: job.id, attempt: 1, offset: 0 });
        assert.equal(first.rows.length, 64, 'one read answers 64 rows');
        assert.equal(first.size, 900, 'the end of all 100 rows, not of the 64 read');
        assert.deepEqual(first.run, { epoch: job.epoch, from: 0 }, 'the run whose rows are kept');
        const span = joinOutput(first, 0, 1 << 20);
        assert.equal(text(span?.bytes ?? new Uint8Array()).slice(-9), line(63));
        const rest = await store.output.read({ job: job.id, attempt: 1, offset: 576 });
        assert.deepEqual([rest.rows.length, rest.rows[0]?.offset, rest.size], [36, 576, 900]);
      }));

    test('keeps a window per attempt, and a smaller one once the run has ended', () =>
      withFixture(harness, async ({ store }) => {
        const { session, job } = await givenRunning(store);
        const mib = 'x'.repeat(OUTPUT_WINDOW);
        await store.output.append({ session, rows: outputRows([run(job, 0, mib)]) });
        await store.output.append({
          session,
          rows: outputRows([run(job, OUTPUT_WINDOW, mib.slice(0, 100_000))]),
        });
        const kept = await store.output.read({ job: job.id, attempt: 1, offset: 0 });
        const end = OUTPUT_WINDOW + 100_000;
        assert.equal(kept.size, end);
        const first = kept.rows[0]?.offset ?? -1;
        assert.ok(
          first > 0 && first <= end - OUTPUT_WINDOW,
          `the oldest rows dropped (first kept at ${first})`,
        );
        const span = joinOutput(kept, 0, 4 << 20);
        assert.equal(span?.from, first, 'a read from 0 starts at the window');
        assert.equal(span?.bytes.length, end - first);
        await store.output.append({ session, rows: outputRows([run(job, end, 'bye\n', true)]) });
        const ended = await store.output.read({ job: job.id, attempt: 1, offset: 0 });
        const from = ended.rows[0]?.offset ?? -1;
        assert.ok(
          end + 4 - from < 2 * OUTPUT_KEEP_ENDED,
          `an ended run keeps its last bytes (${end + 4 - from})`,
        );
        assert.ok(end + 4 - from >= OUTPUT_KEEP_ENDED);
      }));

    test('the leader’s trim shrinks attempts no run holds, and drops jobs that ended long ago', () =>
      withFixture(harness, async ({ store }) => {
        const { session, job, term } = await givenRunning(store, 'a');
        const mib = 'x'.repeat(OUTPUT_WINDOW);
        await store.output.append({ session, rows: outputRows([run(job, 0, mib)]) });
        const { job: other } = await store.jobs.enqueue({ key: 'b' });
        const placed = await store.dispatch.place({ id: other.id, host: 'box-1', term });
        assert.ok(placed.ok);
        await store.jobs.start({ id: other.id, session, epoch: placed.job.epoch });
        await store.output.append({ session, rows: outputRows([run(placed.job, 0, mib)]) });
        const kept = async (id: number): Promise<number> => {
          const read = await store.output.read({ job: id, attempt: 1, offset: 0 });
          return read.size - (read.rows[0]?.offset ?? read.size);
        };
        const far = { keep: OUTPUT_KEEP_ENDED, endedBefore: 0 };
        assert.equal(await store.output.trim(far), 0, 'both runs held: nothing trimmed');
        // Taken over (its last flush never comes): attempt 1 is no run's any more.
        const back = { id: job.id, session, epoch: job.epoch, reason: 'x', policy: POLICY };
        assert.ok((await store.dispatch.requeue(back)).ok);
        assert.ok((await store.output.trim(far)) > 0);
        const left = await kept(job.id);
        assert.ok(left >= OUTPUT_KEEP_ENDED && left < 2 * OUTPUT_KEEP_ENDED, `kept ${left}`);
        assert.equal(await kept(other.id), OUTPUT_WINDOW, 'a held run keeps its window');
        const guard = { id: other.id, session, epoch: placed.job.epoch };
        assert.ok((await store.jobs.finish({ ...guard, status: 'done', exitCode: 0 })).ok);
        const finishedAt = (await store.jobs.get(other.id))?.finishedAt ?? 0;
        await store.output.trim({ keep: OUTPUT_KEEP_ENDED, endedBefore: finishedAt });
        assert.ok((await kept(other.id)) > 0, 'ended at the limit, not before: kept');
        await store.output.trim({ keep: OUTPUT_KEEP_ENDED, endedBefore: finishedAt + 1 });
        assert.equal((await store.output.read({ job: other.id, attempt: 1, offset: 0 })).size, 0, 'dropped');
        assert.equal(await kept(job.id), left, 'a job not ended keeps its last bytes');
      }));

    test('refuses a write of a stale epoch or another session, and a later attempt drops the earlier one', () =>
      withFixture(harness, async ({ store }) => {
        const { session, job, term } = await givenRunning(store);
        await store.output.append({ session, rows: outputRows([run(job, 0, 'first run\n')]) });
        const stale = { ...job, epoch: job.epoch - 1 };
        assert.deepEqual(
          await store.output.append({ session, rows: outputRows([run(stale, 10, 'no\n')]) }),
          [],
        );
        const other = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 2 });
        const refused = await store.output.append({
          session: other.id,
          rows: outputRows([run(job, 10, 'no\n')]),
        });
        assert.deepEqual(refused, []);
        assert.equal((await store.output.read({ job: job.id, attempt: 1, offset: 0 })).size, 10);
        // Taken over: the job goes back to the queue and runs again under a new epoch, attempt 2.
        assert.ok(
          (
            await store.dispatch.requeue({
              id: job.id,
              session,
              epoch: job.epoch,
              reason: 'x',
              policy: POLICY,
            })
          ).ok,
        );
        assert.deepEqual(
          await store.output.append({ session, rows: outputRows([run(job, 10, 'late\n')]) }),
          [],
        );
        await new Promise((resolve) => setTimeout(resolve, 5));
        const again = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(again.ok, 'placed again');
        await store.jobs.start({ id: job.id, session, epoch: again.job.epoch });
        assert.equal(again.job.attempt, 2);
        assert.deepEqual(
          await store.output.append({ session, rows: outputRows([run(again.job, 0, 'second\n')]) }),
          [job.id],
        );
        assert.equal(
          (await store.output.read({ job: job.id, attempt: 1, offset: 0 })).size,
          0,
          'attempt 1 dropped',
        );
        const second = await store.output.read({ job: job.id, attempt: 2, offset: 0 });
        assert.equal(text(joinOutput(second, 0, 100)?.bytes ?? new Uint8Array()), 'second\n');
      }));
  });
}
