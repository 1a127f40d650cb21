/**
 * Auto-enqueue with real processes on both engines (docs/decisions/0031-auto-enqueue.md): with
 * `baton setting set auto-enqueue on`, a leading `baton up` queues a job for a task added by hand,
 * runs it with its default agent command, queues the task again once a reviewer rejects it (the
 * next run reads the rejection as BATON_FEEDBACK), and queues nothing once the task is done or for
 * a task that waits behind a gate; while the setting is off, it queues nothing.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

/** The agent: writes the feedback it was given to a file named by its task and job. */
const AGENT = 'printf %s "$BATON_FEEDBACK" > "feedback-$BATON_KEY-$BATON_JOB"';

for (const db of bothEngines()) {
  describe(`${db.name}: auto-enqueue`, () => {
    test('queues added and rejected tasks for the leader to run, never a gated or finished one, nothing while off', async () => {
      const c = await clusterFixture(db);
      try {
        const ok = async (...args: string[]): Promise<Record<string, unknown>> => {
          const r = await c.baton(...args, '--json');
          assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
          return JSON.parse(r.stdout) as Record<string, unknown>;
        };
        const jobsOf = async (key: string) => c.store.jobs.list({ key });
        await ok('task', 'add', 'before', '--title', 'added while auto-enqueue is off');
        const up = c.up('a', '--agent-command', AGENT);
        await up.waitForLog(/leading the dispatcher/);
        await ok('task', 'add', 'gated', '--title', 'waits for its design');
        await ok('gate', 'gated', 'design');
        const on = await ok('setting', 'set', 'auto-enqueue', 'on');
        assert.equal(on['value'], 'on');
        await ok('task', 'add', 'reviewed', '--title', 'reviewed work', '--review', 'required');
        await waitUntil(
          async () => (await c.store.tasks.get('reviewed'))?.state === 'in_review',
          30_000,
          `the added task to be run by auto-enqueue:\n${up.log()}`,
        );
        await waitUntil(
          async () => (await c.store.tasks.get('before'))?.state === 'done',
          30_000,
          'the task added before the setting to be run once it is on',
        );
        const [enqueued] = await c.store.audit.list({ key: 'before', type: 'job:enqueued' });
        const [setOn] = await c.store.audit.list({ type: 'setting:set' });
        assert.ok(enqueued !== undefined && setOn !== undefined);
        assert.ok(enqueued.id > setOn.id, 'nothing was queued while the setting was off');
        assert.equal(enqueued.detail['by'], 'auto-enqueue');
        const leader = enqueued.session === null ? null : await c.store.sessions.get(enqueued.session);
        assert.equal(leader?.host, 'a', "queued under the leader's session");

        await ok('reject', 'reviewed', '--reason', 'add a regression test');
        await waitUntil(
          async () =>
            (await jobsOf('reviewed')).length === 2 &&
            (await c.store.tasks.get('reviewed'))?.state === 'in_review',
          30_000,
          `the rejected task to be queued and run again:\n${up.log()}`,
        );
        const rerun = Math.max(...(await jobsOf('reviewed')).map((job) => job.id));
        assert.equal(
          readFileSync(join(c.dir, `feedback-reviewed-${rerun}`), 'utf8'),
          'add a regression test',
        );
        assert.equal((await ok('approve', 'reviewed', '--gate', 'review'))['state'], 'done');
        const reruns = await c.store.audit.list({ key: 'reviewed', type: 'job:enqueued' });
        assert.deepEqual(
          reruns.map((row) => row.detail['by']),
          ['auto-enqueue', 'auto-enqueue'],
        );
        await up.waitForLog(/auto-enqueue: queued job \d+ \(reviewed\)/);

        // A later pass queues nothing more: the done tasks are done, the gated one waits for a person.
        await ok('task', 'add', 'last', '--title', 'the last one');
        await waitUntil(
          async () => (await c.store.tasks.get('last'))?.state === 'done',
          30_000,
          'the last task',
        );
        assert.equal((await jobsOf('reviewed')).length, 2);
        assert.equal((await jobsOf('before')).length, 1);
        assert.deepEqual(await jobsOf('gated'), [], 'a gated task is left to a person');
      } finally {
        await c.close();
      }
    });
  });
}
