import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { SqliteExecutor } from './executor.js';
import { TickBatcher } from './tick-batcher.js';
import { sqliteJobs } from './jobs.js';
import { sqliteSessions } from './tasks-claims.js';
import { sqliteDatabase } from '../../../test/support/databases.js';

function table(): SqliteExecutor {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  return new SqliteExecutor(db);
}

test('calls made in one turn share one transaction; a call that throws undoes only itself', async () => {
  const exec = table();
  const batcher = new TickBatcher(exec, (n: number) => {
    exec.db.prepare('INSERT INTO t (n) VALUES (?)').run(n);
    if (n === 2) throw new Error('two is refused');
    return n * 10;
  });
  const before = exec.writes;
  const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(n)));
  assert.equal(exec.writes - before, 1, 'one write transaction for the three calls');
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [10, 'two is refused', 30],
  );
  assert.deepEqual(exec.db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [1, 3]);
  assert.equal(await batcher.submit(4), 40, 'the next turn is a batch of its own');
  assert.equal(exec.writes - before, 2);
});

test('when the transaction itself fails, every call of the batch is rejected', async () => {
  const exec = table();
  let calls = 0;
  const batcher = new TickBatcher(exec, (n: number) => {
    exec.db.prepare('INSERT INTO t (n) VALUES (?)').run(n);
    if (++calls === 2) exec.db.close(); // the connection goes away under the batch
    return n;
  });
  const results = await Promise.allSettled([1, 2].map((n) => batcher.submit(n)));
  assert.ok(results.every((r) => r.status === 'rejected'));
});

test("a job's start and a session sent in one turn commit in one transaction, each with its own answer", async () => {
  const db = new Database(await sqliteDatabase().fresh());
  const exec = new SqliteExecutor(db);
  const jobs = sqliteJobs(exec);
  const sessions = sqliteSessions(exec);
  const { job } = await jobs.enqueue({ key: 'k' });
  const before = exec.writes;
  // As a run sends them (daemon/run-start.ts): the start of a job that is not claimed is refused.
  const [started, session] = await Promise.all([
    jobs.start({ id: job.id, session: 1, epoch: job.epoch }),
    sessions.start({ kind: 'agent', host: 'h', pid: 1 }),
  ]);
  assert.equal(exec.writes - before, 1, 'one write transaction, one commit');
  assert.equal(started.ok ? 'started' : started.reason, 'lost');
  assert.equal((await sessions.get(session.id))?.state, 'live', 'the session committed');
  db.close();
});
