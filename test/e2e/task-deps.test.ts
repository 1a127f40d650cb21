/**
 * Task dependencies with a real `baton up` on both engines (docs/decisions/0035-task-dependencies.md):
 * b depends on a and is queued first, yet a runs first; while a waits in review, b's job waits
 * in the queue saying so (`waits for task a (in_review)`), and b runs only once `baton approve a`
 * has made a done. And 55 jobs waiting for a, ahead of it in the queue, do not hide it from the
 * dispatcher (the first 50 queued were all it read once).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

/** The agent: appends its task's key to a file, so the order of runs can be read back. */
const AGENT = 'echo "$BATON_KEY" >> runs.txt';

for (const db of bothEngines()) {
  describe(`${db.name}: task dependencies under baton up`, () => {
    test('b waits for a: a runs first, b waits in the queue naming a until `baton approve a`, then runs', async () => {
      const c = await clusterFixture(db);
      try {
        const ok = async (...args: string[]): Promise<unknown> => {
          const r = await c.baton(...args, '--json');
          assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
          return JSON.parse(r.stdout) as unknown;
        };
        await ok('task', 'add', 'a', '--title', 'add the migration', '--review', 'required');
        await ok('task', 'add', 'b', '--title', 'use the new column', '--after', 'a');
        const {
          job: { id: bJob },
        } = (await ok('enqueue', 'b')) as { job: { id: number } };
        await ok('enqueue', 'a');
        const up = c.up('host-1', '--agent-command', AGENT);
        const reasonOfB = async (): Promise<unknown> => {
          const jobs = (await ok('queue', 'list')) as { id: number; status: string; reason: string | null }[];
          const job = jobs.find((row) => row.id === bJob);
          return job === undefined ? undefined : [job.status, job.reason];
        };
        await waitUntil(
          async () => (await c.store.tasks.get('a'))?.state === 'in_review',
          30_000,
          `a to run and wait in review:\n${up.log()}`,
        );
        await waitUntil(
          async () => JSON.stringify(await reasonOfB()) === '["queued","waits for task a (in_review)"]',
          30_000,
          `b's job to wait naming a in review (now ${JSON.stringify(await reasonOfB())}):\n${up.log()}`,
        );
        assert.equal(readFileSync(join(c.dir, 'runs.txt'), 'utf8'), 'a\n', 'only a has run');
        const show = (await ok('task', 'show', 'b')) as { dependencies: { waitsFor: { key: string }[] } };
        assert.deepEqual(
          show.dependencies.waitsFor.map((link) => link.key),
          ['a'],
        );

        await ok('approve', 'a', '--gate', 'review');
        await waitUntil(
          async () => (await c.store.tasks.get('b'))?.state === 'done',
          30_000,
          `b to run once a is done:\n${up.log()}`,
        );
        assert.equal(readFileSync(join(c.dir, 'runs.txt'), 'utf8'), 'a\nb\n');
        const [approved] = await c.store.audit
          .list({ key: 'a', type: 'task:state' })
          .then((rows) => rows.filter((row) => row.detail['to'] === 'done'));
        const [placed] = await c.store.audit.list({ key: 'b', type: 'job:placed' });
        assert.ok(approved !== undefined && placed !== undefined);
        assert.ok(placed.id > approved.id, "b's job was placed only after a was approved");
      } finally {
        await c.close();
      }
    });

    test('55 jobs waiting for a, queued ahead of it, do not hide it: a runs, then they all do', async () => {
      const c = await clusterFixture(db);
      try {
        const by = { name: 'alice@box' };
        await c.store.tasks.add({ key: 'a' });
        const waiting = Array.from({ length: 55 }, (_, index) => `b${index + 1}`);
        for (const key of waiting) {
          await c.store.jobs.enqueue({ key, priority: 1 });
          await c.store.lifecycle.depend({ key, on: 'a', by });
        }
        const enqueued = await c.baton('enqueue', 'a', '--priority', '100');
        assert.equal(enqueued.code, 0, enqueued.stderr);
        const up = c.up('host-1', '--agent-command', AGENT);
        const done = async (): Promise<number> =>
          (await c.store.tasks.list({})).filter((task) => task.state === 'done').length;
        await waitUntil(
          async () => (await c.store.tasks.get('a'))?.state === 'done',
          30_000,
          `a to run although 55 jobs waiting for it come first:\n${up.log()}`,
        );
        await waitUntil(async () => (await done()) === 56, 90_000, `the 55 to run after a:\n${up.log()}`);
        const runs = readFileSync(join(c.dir, 'runs.txt'), 'utf8').trim().split('\n');
        assert.equal(runs[0], 'a', 'a ran first');
        assert.deepEqual([...runs.slice(1)].sort(), [...waiting].sort());
      } finally {
        await c.close();
      }
    });
  });
}
