/**
 * An agent that finished (exit 0) while its `baton up` was paused keeps its success: woken past
 * its agents' watchdog, the runner fences itself (decision 0061), but an exit 0 it had not yet
 * reported is written under the job's guard, not left to the rescue to run the work again
 * (core/run-verdict.ts). A real `baton up`, paused with SIGSTOP outside SQLite's write lock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, pauseOutsideWriteLock } from './cluster-support.js';

const db = sqliteDatabase();

test('an agent that exited 0 while its runner was paused past the watchdog is done once, not run again', async () => {
  const c = await clusterFixture(db);
  try {
    // Heartbeat 2 s, stale-after 14 s: the watchdog's deadline (the trust window) is 10 s, and a
    // runner woken just past it still has about a heartbeat before recovery could see it stale.
    const up = c.up(
      'a',
      '--containment',
      'process-group',
      '--heartbeat-interval',
      '2',
      '--stale-after',
      '14',
    );
    await up.waitRunning();
    const command = 'echo ran >> runs; touch ready; while [ ! -e go ]; do sleep 0.05; done; exit 0';
    await c.store.jobs.enqueue({ key: 'paused-done', command });
    await waitUntil(() => existsSync(join(c.dir, 'ready')), 15_000, 'the agent to start');
    await up.waitForLog(/running as pid/);
    const paused = performance.now();
    pauseOutsideWriteLock(db, c.url, up);
    writeFileSync(join(c.dir, 'go'), ''); // the agent exits 0 while its runner is stopped
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, paused + 10_300 - performance.now())));
    up.signal('SIGCONT');
    // The watchdog's fence as a rule; on a loaded machine the heartbeat's may come first (CI91).
    await up.waitForLog(/fenced off: /);
    const job = (await c.store.jobs.list({ key: 'paused-done' }))[0];
    await waitUntil(
      async () => (await c.store.jobs.get(job?.id ?? 0))?.status !== 'running',
      15_000,
      `the job's end:\n${up.log()}`,
    );
    const ended = await c.store.jobs.get(job?.id ?? 0);
    assert.equal(ended?.status, 'done', up.log());
    assert.equal(ended?.exitCode, 0);
    const rows = (await c.store.audit.list({ jobId: job?.id ?? 0 })).map((row) => row.type);
    assert.equal(rows.filter((type) => type === 'job:requeued').length, 0, rows.join(', '));
    assert.equal(rows.filter((type) => type === 'job:finished').length, 1, rows.join(', '));
    // Kept through the fence, or reported done before the fence came: either way once, never rerun.
    const log = up.log();
    if (!/done: exited 0 before its runner's fence/.test(log))
      assert.ok(log.indexOf('paused-done: done') < log.indexOf('fenced off:'), log);
    await up.waitRunning(30_000, 2); // rejoined under a new session: nothing runs the work again
    assert.equal(readFileSync(join(c.dir, 'runs'), 'utf8'), 'ran\n');
  } finally {
    await c.close();
  }
});
