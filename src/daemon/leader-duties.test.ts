/**
 * The leader's upkeep duties (leader-duties.ts leaderUpkeep), on a real SQLite store. The output
 * stream's trim: a job that ended more than the log age limit before the duty's clock loses its
 * stream, one that ended less long ago keeps it; the duty's clock is a fixed one: the limit is
 * counted from its wall time, not the database's. Job retention: only under the elector's live
 * term, judged on the database clock (moved, not waited for), and off with `--retain-jobs off`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { daemonFixture } from '../../test/support/daemon-fixture.js';
import { outputRows } from '../core/output-stream.js';
import type { Clock } from '../core/time.js';
import { OUTBOX_PRUNE_BATCH } from '../core/outbox-retention.js';
import { leaderUpkeep, type LeaderDuty } from './leader-duties.js';
import type { Store } from '../store/store.js';

const DAY_MS = 86_400_000;

const at = (wall: number): Clock => ({
  wallNow: () => wall,
  monotonicNowMs: () => 0,
  sleep: () => Promise.resolve(),
});

/** The leader's duties on `store` as `baton up` builds them, with an elector at `term` (null: not leading). */
function duties(
  store: Store,
  options: {
    wall?: number;
    retainJobsMs?: number | null;
    retainOutboxMs?: number | null;
    term?: number | null;
    log?: string[];
  },
): LeaderDuty[] {
  const elector = { name: 'dispatcher', leaderTerm: () => options.term ?? null };
  const logKeep = { maxAgeMs: 14 * DAY_MS, maxBytes: 1 << 30 };
  const log = (line: string): void => void options.log?.push(line);
  return leaderUpkeep(store, 1, at(options.wall ?? 0), log, {
    logKeep,
    retainJobsMs: options.retainJobsMs,
    retainOutboxMs: options.retainOutboxMs,
    elector,
  });
}

function duty(all: readonly LeaderDuty[], name: string): LeaderDuty {
  const found = all.find((one) => one.name === name);
  assert.ok(found !== undefined, `a ${name} duty`);
  return found;
}

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
    const size = async (): Promise<number> =>
      (await f.store.output.read({ job: job.id, attempt: 1, offset: 0 })).size;
    await duty(duties(f.store, { wall: finishedAt + 14 * DAY_MS - 1 }), 'output trim').run();
    assert.equal(await size(), 4, 'ended less than 14 days before: kept');
    await duty(duties(f.store, { wall: finishedAt + 14 * DAY_MS + 1 }), 'output trim').run();
    assert.equal(await size(), 0, 'ended more than 14 days before: dropped');
  } finally {
    await f.store.close();
  }
});

test('job retention removes old finished jobs under the live term alone; off with --retain-jobs off', async () => {
  const f = await daemonFixture();
  try {
    const { job: first } = await f.store.jobs.enqueue({ key: 'k' });
    assert.ok((await f.store.jobs.cancel({ id: first.id })).ok);
    const { job: newest } = await f.store.jobs.retry({ id: first.id });
    const lease = await f.store.leases.acquire({ name: 'dispatcher', holder: '1', ttlMs: 30 * DAY_MS });
    assert.ok(lease.ok);
    await f.moveDb(3 * DAY_MS);
    assert.equal(
      duties(f.store, { retainJobsMs: null, term: lease.lease.term }).some(
        (one) => one.name === 'job retention',
      ),
      false,
      'off: no such duty',
    );
    const log: string[] = [];
    await duty(duties(f.store, { retainJobsMs: 2 * DAY_MS, term: null, log }), 'job retention').run();
    await duty(
      duties(f.store, { retainJobsMs: 2 * DAY_MS, term: lease.lease.term + 1, log }),
      'job retention',
    ).run();
    assert.notEqual(await f.store.jobs.get(first.id), null, 'not leading, or under a stale term: kept');
    await duty(
      duties(f.store, { retainJobsMs: 4 * DAY_MS, term: lease.lease.term, log }),
      'job retention',
    ).run();
    assert.notEqual(await f.store.jobs.get(first.id), null, 'ended within the retention: kept');
    assert.deepEqual(log, []);
    await duty(
      duties(f.store, { retainJobsMs: 2 * DAY_MS, term: lease.lease.term, log }),
      'job retention',
    ).run();
    assert.equal(await f.store.jobs.get(first.id), null, 'removed under the live term');
    assert.equal((await f.store.jobs.get(newest.id))?.status, 'queued');
    assert.match(log.join('\n'), /^job retention: removed 1 finished jobs that ended before \S+Z$/);
  } finally {
    await f.store.close();
  }
});

test('outbox retention removes rows applied a week ago in batches, never a pending one; none with off', async () => {
  const f = await daemonFixture();
  try {
    const count = 2 * OUTBOX_PRUNE_BATCH + 1;
    for (let n = 1; n <= count; n++) await f.store.tasks.add({ key: `github:acme/api#${n}` });
    await f.store.github.applied((await f.store.github.pending({ limit: count })).map((row) => row.id));
    await f.store.tasks.add({ key: 'github:acme/hand#1' }); // a repository no sync applies
    assert.equal(await f.store.github.backlog(), 1);
    await f.moveDb(8 * DAY_MS);
    const name = 'github outbox retention';
    const off = duties(f.store, { retainOutboxMs: null });
    assert.equal(
      off.some((one) => one.name === name),
      false,
      'off: no such duty',
    );
    const log: string[] = [];
    await duty(duties(f.store, { retainOutboxMs: 9 * DAY_MS, log }), name).run();
    assert.deepEqual(log, [], 'applied within the retention: kept');
    await duty(duties(f.store, { log }), name).run();
    assert.match(log.join('\n'), new RegExp(`^${name}: removed ${count} rows applied before \\S+Z$`));
    const left = await f.store.github.pending({ limit: 10, key: 'github:acme/hand#1' });
    assert.equal(left.length, 1, 'the pending row stays, eight days old');
    assert.equal(
      (await f.store.github.prune({ olderThanMs: 0, limit: 10 })).removed,
      0,
      'nothing else was there',
    );
  } finally {
    await f.store.close();
  }
});
