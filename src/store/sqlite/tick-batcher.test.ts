import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { SqliteExecutor } from './executor.js';
import { TickBatcher } from './tick-batcher.js';

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
