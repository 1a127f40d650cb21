/**
 * An operator stops `baton up` gracefully (SIGTERM, to upgrade or restart it) while a job runs.
 * The agent did not fail: its runner gives the job back to the queue at once with its attempt
 * given back, so restarts never use up a job's attempts. A runner that dies instead (SIGKILL) is
 * rescued by the sweep and its attempt counts (restart.test.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { agentStarted, clusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

const STOPS = 3;

for (const db of bothEngines()) {
  describe(`${db.name}: baton up stopped gracefully while a job runs`, () => {
    test('gives the job back each time without counting the attempt, and it finishes done', async () => {
      const c = await clusterFixture(db);
      try {
        const go = join(c.dir, 'go');
        const command = `test -e '${go}' && exit 0 || exec sleep 60`;
        const { job } = await c.store.jobs.enqueue({ key: 'long', command, attemptMax: 2 });
        for (let stop = 1; stop <= STOPS; stop++) {
          const up = c.up('solo');
          await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, `the agent to start (${stop})`);
          assert.equal((await c.store.jobs.get(job.id))?.attempt, 1, `stop ${stop}: its one attempt so far`);
          up.signal(stop === 2 ? 'SIGINT' : 'SIGTERM');
          await up.exited();
          assert.equal(up.child.exitCode, 0, up.log());
          const after = await c.store.jobs.get(job.id);
          assert.equal(after?.attempt, 0, `stop ${stop}: the attempt is given back`);
          assert.equal(after?.status, 'queued', `stop ${stop}: back in the queue at once, not failed`);
          assert.match(after?.reason ?? '', /^requeued: runner shut down; the agent did not fail/);
          assert.match(up.log(), /job \d+ long: runner shut down; queued/);
        }
        writeFileSync(go, '');
        const last = c.up('solo');
        await waitUntil(
          async () => (await c.store.jobs.get(job.id))?.status === 'done',
          30_000,
          `the job to finish once allowed to:\n${last.log()}`,
        );
        assert.equal((await c.store.jobs.get(job.id))?.attempt, 1);
        const requeued = await c.store.audit.list({ jobId: job.id, type: 'job:requeued' });
        assert.deepEqual(
          requeued.map((entry) => [entry.epoch, entry.detail['attempt']]),
          [
            [1, 0],
            [2, 0],
            [3, 0],
          ],
        );
        for (const entry of requeued) assert.match(String(entry.detail['reason']), /^runner shut down; /);
      } finally {
        await c.close();
      }
    });
  });
}
