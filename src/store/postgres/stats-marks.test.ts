/**
 * stats()' deletion mark on PostgreSQL (decision 0040, migration 0037) moves only when a delete
 * removed rows, and never for job retention's batches (migration 0038: stores subtract what they
 * log instead): each moved mark makes every store count the jobs table again from its first row.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { openPostgresStore } from './postgres-store.js';

const DAY_MS = 86_400_000;

test('prune batches leave the jobs mark; a delete of none leaves it, any other delete of a job moves it', async () => {
  const url = await freshPostgresUrl();
  const store = await openPostgresStore({ url });
  const outside = new pg.Client({ connectionString: url });
  await outside.connect();
  const mark = async (): Promise<number> =>
    Number((await outside.query<{ n: string }>(`SELECT n FROM stats_marks WHERE tbl = 'jobs'`)).rows[0]?.n);
  try {
    const before = await mark();
    for (let batch = 0; batch < 3; batch++) {
      const result = await store.retention.pruneJobs({ olderThanMs: DAY_MS, limit: 10 });
      assert.ok(result.ok && result.removed === 0);
    }
    assert.equal(await mark(), before, 'three empty batches moved the mark');
    const { job: old } = await store.jobs.enqueue({ key: 'old' });
    await store.jobs.cancel({ id: old.id });
    await store.jobs.enqueue({ key: 'old' }); // the task's newest job, which retention keeps
    await outside.query(`UPDATE jobs SET finished_at = now() - interval '3 days' WHERE id = $1`, [old.id]);
    const pruned = await store.retention.pruneJobs({ olderThanMs: DAY_MS, limit: 10 });
    assert.ok(pruned.ok && pruned.removed === 1, JSON.stringify(pruned));
    assert.equal(await mark(), before, 'a batch that removed a job moved the mark');
    await outside.query(`DELETE FROM jobs WHERE id = $1`, [old.id]);
    assert.equal(await mark(), before, 'a delete of no row moved the mark');
    await outside.query(`DELETE FROM jobs`);
    assert.equal(await mark(), before + 1);
  } finally {
    await outside.end();
    await store.close();
  }
});
