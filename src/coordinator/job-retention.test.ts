/**
 * Job retention's passes (job-retention.ts pruneJobs) on a real SQLite store: each batch goes on
 * after the previous one's last job, a pass stopped at its budget answers where the next goes on,
 * and a pass that reached the end answers null, so the next sweep starts at the head and removes
 * what was kept before (the jobs seeded with SQL, the database clock moved, never slept for).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { daemonFixture } from '../../test/support/daemon-fixture.js';
import { pruneJobs } from './job-retention.js';

const DAY_MS = 86_400_000;

test('a pass goes on where the last one stopped; a pass that reached the end starts the next at the head', async () => {
  const f = await daemonFixture();
  try {
    const { job: kept } = await f.store.jobs.enqueue({ key: 'kept' });
    assert.ok((await f.store.jobs.cancel({ id: kept.id })).ok); // the newest of its task: kept
    const many = await f.store.tasks.add({ key: 'many', title: 'many' });
    const now = await f.store.now();
    const db = new Database(f.url);
    try {
      // 1,001 cancelled jobs of `many` that finished after `kept`.
      db.prepare(
        `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1001)
         INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
         SELECT (SELECT id FROM tasks WHERE key = ?), 'cancelled', 100, ?, ? + x FROM c`,
      ).run(many.key, now, now);
    } finally {
      db.close();
    }
    await f.store.jobs.enqueue({ key: 'many' }); // its newest: every cancelled one may go
    await f.moveDb(3 * DAY_MS);
    const first = await pruneJobs(f.store, { olderThanMs: DAY_MS, maxBatches: 1 });
    assert.deepEqual([first.removed, first.more], [500, true]);
    assert.ok(first.next !== null, 'stopped at its budget: where the next pass goes on');
    // `kept` becomes removable (its task has a newer job), but it is before where the sweep is.
    await f.store.jobs.retry({ id: kept.id });
    const second = await pruneJobs(f.store, { olderThanMs: DAY_MS, after: first.next });
    assert.deepEqual([second.removed, second.more, second.next], [501, false, null]);
    assert.notEqual(await f.store.jobs.get(kept.id), null, 'behind the sweep: left for the next');
    const third = await pruneJobs(f.store, { olderThanMs: DAY_MS });
    assert.deepEqual([third.removed, third.next], [1, null]);
    assert.equal(await f.store.jobs.get(kept.id), null, 'the next sweep, from the head, removes it');
  } finally {
    await f.store.close();
  }
});

test('a pass goes on past a batch that looked only at kept jobs, to the end of the sweep', async () => {
  const f = await daemonFixture();
  try {
    const many = await f.store.tasks.add({ key: 'many', title: 'many' });
    const now = await f.store.now();
    const db = new Database(f.url);
    try {
      // 5,000 tasks with one old job each, the newest of its task (kept), first in the index: a
      // batch looks at 5,000 entries (ten times its 500) and finds none to remove; then 10 that go.
      db.prepare(
        `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
         INSERT INTO tasks (key, title, created_at) SELECT 'kept-' || x, 'kept', ? FROM c`,
      ).run(now);
      db.prepare(
        `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
         SELECT id, 'done', 100, ?, ? FROM tasks WHERE key LIKE 'kept-%'`,
      ).run(now, now);
      db.prepare(
        `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10)
         INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
         SELECT (SELECT id FROM tasks WHERE key = ?), 'cancelled', 100, ?, ? + x FROM c`,
      ).run(many.key, now, now);
    } finally {
      db.close();
    }
    await f.store.jobs.enqueue({ key: 'many' });
    await f.moveDb(3 * DAY_MS);
    const pass = await pruneJobs(f.store, { olderThanMs: DAY_MS });
    assert.deepEqual([pass.removed, pass.more, pass.next], [10, false, null]);
  } finally {
    await f.store.close();
  }
});
