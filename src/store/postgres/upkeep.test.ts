import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { hostname } from 'node:os';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { waitUntil } from '../../../test/support/wait.js';
import { openPostgresStore } from './postgres-store.js';
import { UpkeepSchedule, queueUpkeep } from './upkeep.js';

const policy = { claims: 100, share: 0.2, failedWaitMs: 60_000, runTimeoutMs: 60_000 };

test('upkeep runs once enough jobs were taken, one run at a time', () => {
  const s = new UpkeepSchedule(policy);
  assert.equal(s.took(60, 0), false, 'below the count');
  assert.equal(s.took(40, 1), true, 'the count reached: a run starts');
  assert.equal(s.took(500, 2), false, 'no second run while one is running');
  s.ended(2, 12, true);
  // It took 10 ms at a share of 0.2: the next waits 40 ms after the end, and for 100 more jobs
  // (the 500 taken during the run count towards them).
  assert.equal(s.took(1, 51), false, 'too soon after a 10 ms run');
  assert.equal(s.took(1, 52), true, 'the wait is over and the count was reached during the run');
});

test('upkeep counts afresh after each run and waits long after a failed one', () => {
  const s = new UpkeepSchedule(policy);
  assert.equal(s.took(100, 0), true);
  s.ended(0, 0, true);
  assert.equal(s.took(99, 1), false, 'the count starts again from zero');
  assert.equal(s.took(1, 1), true);
  s.ended(1, 5, false);
  assert.equal(s.took(1_000, 59_999), false, 'a failed run holds the next off for failedWaitMs');
  assert.equal(s.took(1, 60_005), true);
});

test('a PostgreSQL store vacuums the queue in the background after taking `claims` jobs', async () => {
  const url = await freshPostgresUrl();
  const upkeep = { claims: 5, share: 1, failedWaitMs: 0, runTimeoutMs: 60_000 };
  const store = await openPostgresStore({ url, upkeep });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const count = `SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = 'jobs'`;
  const vacuums = async (): Promise<number> =>
    Number((await client.query<{ n: string }>(count)).rows[0]?.n ?? 0);
  try {
    const s = await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
    for (let i = 0; i < 6; i++) await store.jobs.enqueue({ key: `t${i}` });
    let job = await store.jobs.claimNext({ session: s.id, start: true });
    for (let i = 0; i < 3 && job !== null; i++) {
      const guard = { id: job.id, session: s.id, epoch: job.epoch };
      job = (await store.jobs.finishAndClaimNext({ ...guard, status: 'done', start: true })).next;
    }
    assert.equal(await vacuums(), 0, 'four jobs taken: no run yet');
    assert.ok(job !== null);
    await store.jobs.finishAndClaimNext({
      id: job.id,
      session: s.id,
      epoch: job.epoch,
      status: 'done',
      start: true,
    });
    await waitUntil(async () => (await vacuums()) > 0, 10_000, 'a vacuum of jobs', 20);
    assert.equal(await vacuums(), 1, 'the fifth job started one run');
  } finally {
    await client.end();
    await store.close();
  }
});

test('close cancels a run in progress instead of waiting for it', async () => {
  const url = await freshPostgresUrl();
  const sleep = 'SELECT pg_sleep(60)';
  const upkeep = queueUpkeep({ connectionString: url }, { ...policy, claims: 1 }, sleep);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const active = `SELECT pid FROM pg_stat_activity WHERE query = $1 AND state = 'active'`;
  const sleeping = async (): Promise<number> => (await client.query(active, [sleep])).rowCount ?? 0;
  try {
    upkeep.took(1);
    await waitUntil(async () => (await sleeping()) > 0, 10_000, 'the run to start', 20);
    assert.equal(await sleeping(), 1, 'the run is in progress');
    const cancelled: number[] = [];
    const started = Date.now();
    await upkeep.close(async (pid) => {
      cancelled.push(pid);
      await client.query('SELECT pg_cancel_backend($1::int)', [pid]);
    });
    assert.equal(cancelled.length, 1, 'close cancelled the run through the callback');
    assert.ok(Date.now() - started < 30_000, 'close did not wait for the 60 s run');
    // The backend sends the error before it reports itself idle: give it a moment on a busy machine.
    await waitUntil(async () => (await sleeping()) === 0, 10_000, 'the cancelled run to end', 20);
    assert.equal(await sleeping(), 0, 'the run is gone');
  } finally {
    await client.end();
  }
});
