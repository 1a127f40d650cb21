/**
 * Issue 14, item 5: a short lease TTL killed healthy agents as "fenced". The stale threshold was
 * derived from the TTL, and the trust window it left was shorter than an agent's real heartbeat
 * cadence. Real `baton up` processes on both engines, with baton's own default timings.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { clusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

for (const db of bothEngines()) {
  describe(`${db.name}: heartbeat windows of baton up`, () => {
    test('a short lease TTL leaves a healthy five-second agent alive to finish on its first attempt', async () => {
      const c = await clusterFixture(db);
      try {
        await c.store.jobs.enqueue({ key: 'slow', command: 'sleep 5' });
        const up = c.upDefault('a', '--lease-ttl', '4');
        const active = ['queued', 'claimed', 'running'];
        const job = async () => (await c.store.jobs.list({ key: 'slow' }))[0];
        await waitUntil(async () => !active.includes((await job())?.status ?? ''), 40_000, 'the job to end');
        const done = await job();
        assert.equal(done?.status, 'done', `${done?.reason ?? ''}\n${up.log()}`);
        assert.equal(done?.attempt, 1, 'never requeued off this healthy host');
        assert.doesNotMatch(up.log(), /fenced/);
      } finally {
        await c.close();
      }
    });
  });
}

test('baton up refuses a heartbeat interval that is not well under the stale threshold, creating nothing', async () => {
  const [sqlite] = bothEngines();
  assert.ok(sqlite !== undefined);
  const c = await clusterFixture(sqlite);
  try {
    const fresh = join(c.dir, 'never.db');
    const r = await c.baton('--db', fresh, 'up', '--heartbeat-interval', '2', '--stale-after', '4');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--stale-after 4 s is too close to --heartbeat-interval 2 s/);
    assert.match(r.stderr, /at least 7\.25 s/);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(existsSync(fresh), false, 'no database was made');
    for (const [flag, value] of [
      ['--lease-ttl', '100000'],
      ['--stale-after', '0.0001'],
    ] as const) {
      const out = await c.baton('--db', fresh, 'up', flag, value);
      assert.equal(out.code, 2, out.stderr);
      assert.match(out.stderr, new RegExp(`${flag} must be from 1 ms to 1 h, got "${value}"`));
      assert.equal(existsSync(fresh), false, 'no database was made');
    }
  } finally {
    await c.close();
  }
});
