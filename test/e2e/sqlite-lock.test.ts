/**
 * Issue 14, item 8: a `BEGIN EXCLUSIVE` held on the SQLite file by another program froze `baton up`.
 * Each store call retried synchronously (200 attempts of a one-second busy timeout) on the event
 * loop, so RAM sampling stopped: a 100 MB-budget agent sat at 613 MB until the lock went. Here the
 * sqlite3 shell holds the lock for eight seconds while the agent outgrows its budget: the agent
 * must be dead before the shell lets go, end `oom_killed`, and `baton up` carries on. SQLite only:
 * PostgreSQL has no file another program can lock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, isAlive } from './cluster-support.js';

/** Grows to 300 MB once the lock is held (the `locked` file), then waits to be killed. */
const HOG = [
  'import os, time',
  "open('hog.pid', 'w').write(str(os.getpid()))",
  "while not os.path.exists('locked'): time.sleep(0.05)",
  'a = []',
  'while len(a) < 30:',
  '    a.append(b"x" * 10_000_000)',
  '    time.sleep(0.05)',
  'time.sleep(120)',
  '',
].join('\n');

/** The sqlite3 shell: take the lock, say so, hold it eight seconds, say it lets go, let go. */
const LOCKER = [
  '.timeout 10000',
  'BEGIN EXCLUSIVE;',
  '.shell touch locked',
  '.shell sleep 8',
  '.shell touch releasing',
  'COMMIT;',
  '',
].join('\n');

test('an agent outgrowing its budget while another program holds the SQLite file locked is oom_killed before the lock goes, and baton up carries on', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    writeFileSync(join(c.dir, 'hog.py'), HOG);
    await c.store.jobs.enqueue({ key: 'hog', command: 'python3 hog.py', ramMb: 50 });
    // Stale 20 s: the trust window (16 s) outlasts the lock, which is then no reason to fence.
    const up = c.upDefault('a', '--stale-after', '20', '--containment', 'process-group');
    let hog = 0;
    await waitUntil(
      async () => {
        const job = (await c.store.jobs.list({ key: 'hog' }))[0];
        if (job?.status !== 'running' || !existsSync(join(c.dir, 'hog.pid'))) return false;
        hog = Number(readFileSync(join(c.dir, 'hog.pid'), 'utf8'));
        return hog > 0;
      },
      30_000,
      'the hog to run',
    );
    const shell = spawn('sqlite3', [c.url], { cwd: c.dir, stdio: ['pipe', 'ignore', 'inherit'] });
    shell.stdin.end(LOCKER);
    const shellDone = new Promise<number | null>((resolve) => shell.on('exit', resolve));
    await waitUntil(
      () => !isAlive(hog) || existsSync(join(c.dir, 'releasing')),
      30_000,
      'the hog or the lock',
    );
    assert.equal(existsSync(join(c.dir, 'locked')), true, 'the shell took the lock');
    assert.equal(
      existsSync(join(c.dir, 'releasing')),
      false,
      `the hog died while the lock was held\n${up.log()}`,
    );
    assert.equal(await shellDone, 0, 'the shell held the lock and committed');
    await waitUntil(
      async () => (await c.store.jobs.list({ key: 'hog' }))[0]?.status === 'oom_killed',
      30_000,
      'the job to end oom_killed',
    );
    assert.match((await c.store.jobs.list({ key: 'hog' }))[0]?.reason ?? '', /50 MB budget/);
    // Still up, under the same session, and still running jobs.
    assert.equal(up.child.exitCode, null, up.log());
    await c.store.jobs.enqueue({ key: 'after', command: 'true' });
    await waitUntil(
      async () => (await c.store.jobs.list({ key: 'after' }))[0]?.status === 'done',
      30_000,
      'a job after the lock to be done',
    );
    assert.doesNotMatch(up.log(), /fenced|declared stale|rejoining/);
  } finally {
    await c.close();
  }
});
