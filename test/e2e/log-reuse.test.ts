/**
 * A database made afresh in the same directory (`rm .baton/baton.db; baton init`) numbers its
 * jobs from 1 again, and its job 1 used to append its output to the old job 1's log: the job page
 * and the file then showed another job's output as this one's. A log written before its job was
 * queued is now set aside (kept, under a name the pruner knows) and the run's log starts empty.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture } from './cluster-support.js';

test("a job's log never continues another database's job of the same id", async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const logs = join(c.dir, '.baton', 'logs');
    mkdirSync(logs, { recursive: true });
    const old = join(logs, 'job-1-attempt-1.log');
    writeFileSync(old, 'output of the old database job 1\n');
    const hourAgo = (Date.now() - 3_600_000) / 1000;
    utimesSync(old, hourAgo, hourAgo);
    const { job } = await c.store.jobs.enqueue({ key: 'k', command: 'echo output of this job' });
    assert.equal(job.id, 1);
    c.up('solo');
    await waitUntil(
      async () => (await c.store.jobs.get(job.id))?.status === 'done',
      15_000,
      'the job to end',
    );
    assert.equal(readFileSync(old, 'utf8'), 'output of this job\n');
    const aside = readdirSync(logs).filter((name) => /^job-1-attempt-1\.before-\d+\.log$/.test(name));
    assert.equal(aside.length, 1, readdirSync(logs).join(' '));
    assert.equal(readFileSync(join(logs, aside[0] ?? ''), 'utf8'), 'output of the old database job 1\n');
  } finally {
    await c.close();
  }
});
