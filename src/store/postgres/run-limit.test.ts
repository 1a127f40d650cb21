/**
 * progress.markTimedOut on PostgreSQL writes nothing for a run it does not time out (decision
 * 0037, "Review fixes"): a pull finish checks every job, most with no limit, and a row lock taken
 * to look at the limit is a write (the row's xmax set, WAL for it). The job row's xmax is read
 * before and after 50 checks of a job with no limit and 50 of a job within its limit: unchanged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshPostgresUrl } from '../../../test/support/databases.js';
import { openPostgresStore } from './postgres-store.js';

test('a check of a job with no limit, or within it, leaves its row untouched (no lock, no write)', async () => {
  const url = await freshPostgresUrl();
  const store = await openPostgresStore({ url });
  const outside = new pg.Client({ connectionString: url });
  await outside.connect();
  try {
    const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1, ttlMs: 600_000 });
    await store.jobs.enqueue({ key: 'plain' });
    await store.jobs.enqueue({ key: 'limited', timeLimitMs: 3_600_000 });
    const xmax = async (id: number): Promise<string> => {
      const { rows } = await outside.query<{ xmax: string }>('SELECT xmax::text FROM jobs WHERE id = $1', [
        id,
      ]);
      return rows[0]?.xmax ?? 'none';
    };
    for (const reason of ['none', 'within'] as const) {
      const job = await store.jobs.claimNext({ session: runner.id, start: true });
      assert.ok(job !== null);
      const guard = { id: job.id, session: runner.id, epoch: job.epoch, defaultLimitMs: null };
      const before = await xmax(job.id);
      for (let count = 0; count < 50; count++) {
        assert.deepEqual(await store.progress.markTimedOut(guard), { timedOut: false, reason });
      }
      assert.equal(await xmax(job.id), before, `${job.key}: 50 checks (${reason}) locked or wrote its row`);
    }
  } finally {
    await outside.end();
    await store.close();
  }
});
