/**
 * The leader's time-limit sweep on PostgreSQL never waits for a job's lock (time-limit-sweep.ts):
 * it locks its batch first, passing over a job a worker's finish or batch holds at that moment, so
 * it cannot deadlock with a worker's batch that holds one of its jobs and waits for another. The
 * job passed over is judged at the next pass.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { freshPostgresStore } from '../../../test/support/databases.js';
import type { Store } from '../store.js';

let client: pg.Client;
let store: Store;

before(async () => {
  ({ client, store } = await freshPostgresStore());
});

after(async () => {
  await store.close();
  await client.end();
});

test('the sweep passes over a job whose lock a worker holds, and fails it at the next pass', async () => {
  const worker = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 1 });
  const ids: number[] = [];
  for (const key of ['held', 'free']) {
    await store.jobs.enqueue({ key, timeLimitMs: 1_000 });
    ids.push((await store.jobs.claimNext({ session: worker.id, start: true }))?.id ?? 0);
  }
  const [held, free] = ids;
  await sleep(1_100);
  // A worker's finish in flight: the row locked in its own transaction.
  await client.query('BEGIN');
  await client.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [held]);
  try {
    const sweep = store.progress.sweepTimedOut({ max: 10, leaderSession: worker.id });
    const waited = await Promise.race([sweep.then(() => false), sleep(15_000).then(() => true)]);
    assert.equal(waited, false, "the sweep waited for the worker's lock");
    assert.deepEqual(
      (await sweep).failed.map((job) => job.id),
      [free],
    );
  } finally {
    await client.query('ROLLBACK');
  }
  const next = await store.progress.sweepTimedOut({ max: 10, leaderSession: worker.id });
  assert.deepEqual(
    next.failed.map((job) => job.id),
    [held],
  );
});
