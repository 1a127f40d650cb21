/**
 * The output stream's trim as a leader duty (leader-duties.ts outputTrimDuty), on a real SQLite
 * store: a job that ended more than the log age limit before the duty's clock loses its stream,
 * one that ended less long ago keeps it. The duty's clock is a fixed one: the limit is counted
 * from its wall time, not the database's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { daemonFixture } from '../../test/support/daemon-fixture.js';
import { outputRows } from '../core/output-stream.js';
import type { Clock } from '../core/time.js';
import { outputTrimDuty } from './leader-duties.js';

const DAY_MS = 86_400_000;

test('the output trim duty drops the stream of jobs ended before the log age limit, and keeps the rest', async () => {
  const f = await daemonFixture();
  try {
    const runner = await f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1 });
    await f.store.jobs.enqueue({ key: 'k' });
    const job = await f.store.jobs.claimNext({ session: runner.id, start: true });
    assert.ok(job !== null);
    const run = {
      job: job.id,
      attempt: 1,
      epoch: job.epoch,
      offset: 0,
      bytes: Buffer.from('out\n'),
      ended: true,
    };
    await f.store.output.append({ session: runner.id, rows: outputRows([run]) });
    const guard = { id: job.id, session: runner.id, epoch: job.epoch };
    assert.ok((await f.store.jobs.finish({ ...guard, status: 'done', exitCode: 0 })).ok);
    const finishedAt = (await f.store.jobs.get(job.id))?.finishedAt ?? 0;
    const at = (wall: number): Clock => ({
      wallNow: () => wall,
      monotonicNowMs: () => 0,
      sleep: () => Promise.resolve(),
    });
    const size = async (): Promise<number> =>
      (await f.store.output.read({ job: job.id, attempt: 1, offset: 0 })).size;
    await outputTrimDuty(f.store, at(finishedAt + 14 * DAY_MS - 1), 14 * DAY_MS).run();
    assert.equal(await size(), 4, 'ended less than 14 days before: kept');
    await outputTrimDuty(f.store, at(finishedAt + 14 * DAY_MS + 1), 14 * DAY_MS).run();
    assert.equal(await size(), 0, 'ended more than 14 days before: dropped');
  } finally {
    await f.store.close();
  }
});
