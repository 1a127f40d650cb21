/**
 * A run's output bytes, as `baton job show` counts them: they were sent with each heartbeat tick,
 * so what an agent printed after the last tick before it exited was never counted (a 100 MB
 * flood showed 14 MB; a short job printing at once showed no progress at all).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

test("a job's progress counts every byte its agent printed, up to its exit", async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const { job } = await c.store.jobs.enqueue({ key: 'k', command: 'head -c 300000 /dev/zero' });
    c.up('solo', '--heartbeat-interval', '5', '--stale-after', '20');
    await waitUntil(
      async () => (await c.store.jobs.get(job.id))?.status === 'done',
      15_000,
      'the job to end',
    );
    const shown = JSON.parse((await c.baton('job', 'show', String(job.id), '--json')).stdout) as {
      progress: { outputBytes: number } | null;
    };
    assert.equal(shown.progress?.outputBytes, 300_000);
  } finally {
    await c.close();
  }
});
