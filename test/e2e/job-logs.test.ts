/**
 * Issue 14, item 4: a full disk crashed `baton up`. A job's log write failed with ENOSPC on a
 * stream with no error listener, the process died, and every agent of the host with it. Here the
 * log of one job is a symlink to /dev/full, where every write fails with ENOSPC for real: that
 * job and its neighbour both end done, the job's reason names the cause, and `baton up` carries
 * on. And a job writing without end is held to `--log-max-mb`, its head and tail kept. The engine
 * does not matter here; SQLite keeps it quick.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentPids, agentStarted, clusterFixture, isAlive, type ClusterFixture } from './cluster-support.js';

const jobOf = async (c: ClusterFixture, key: string) => (await c.store.jobs.list({ key }))[0];

async function ended(c: ClusterFixture, key: string): Promise<void> {
  const active = ['queued', 'claimed', 'running'];
  await waitUntil(
    async () => !active.includes((await jobOf(c, key))?.status ?? 'queued'),
    30_000,
    `${key} to end`,
  );
}

test('a job whose log write fails with ENOSPC goes on without its log, and baton up and its other agents live on', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const logs = join(c.dir, '.baton', 'logs');
    mkdirSync(logs, { recursive: true });
    symlinkSync('/dev/full', join(logs, 'job-1-attempt-1.log'));
    const noisy = 'for i in $(seq 1 2000); do echo "line $i"; done; sleep 1; echo last';
    await c.store.jobs.enqueue({ key: 'noisy', command: noisy });
    await c.store.jobs.enqueue({ key: 'steady', command: 'sleep 3; echo steady' });
    const up = c.up('a', '--slots', '2');
    await ended(c, 'noisy');
    await ended(c, 'steady');
    const job = await jobOf(c, 'noisy');
    assert.equal(job?.status, 'done', `${job?.reason ?? ''}\n${up.log()}`);
    assert.match(job?.reason ?? '', /ENOSPC.*output after it dropped/);
    assert.equal((await jobOf(c, 'steady'))?.status, 'done', 'the other agent of the host lived on');
    assert.match(up.log(), /job 1 noisy: log .*ENOSPC.*the job goes on/);
    assert.equal(up.child.exitCode, null, up.log());
    await c.store.jobs.enqueue({ key: 'after', command: 'echo fine' });
    await ended(c, 'after');
    assert.equal((await jobOf(c, 'after'))?.status, 'done');
    // Its heartbeat reports the free space of its state directory, which `baton hosts` shows.
    await waitUntil(async () => (await c.store.hosts.list())[0]?.diskFreeMb != null, 10_000, 'disk free');
    const hosts = await c.baton('hosts');
    assert.match(hosts.stdout, /DISK_FREE/);
    const [header, row] = hosts.stdout
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    assert.match(row?.[header?.indexOf('DISK_FREE') ?? -1] ?? '', /^\d+$/, hosts.stdout);
  } finally {
    await c.close();
  }
});

test('a job log is held to --log-max-mb, keeping its head and tail around a marker; job show says it was cut', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    // About 1.3 MB of numbered lines against a cap of 20 KB.
    await c.store.jobs.enqueue({ key: 'flood', command: 'seq 1 200000' });
    const up = c.up('a', '--log-max-mb', '0.02');
    await ended(c, 'flood');
    assert.equal((await jobOf(c, 'flood'))?.status, 'done', up.log());
    const path = join(c.dir, '.baton', 'logs', 'job-1-attempt-1.log');
    await waitUntil(() => readFileSync(path, 'utf8').trimEnd().endsWith('200000'), 10_000, 'the tail');
    const text = readFileSync(path, 'utf8');
    assert.ok(statSync(path).size < 22_000, `capped near 20 KB, not ${statSync(path).size} bytes`);
    assert.ok(text.startsWith('1\n2\n3\n'), 'the head is kept');
    assert.match(text, /\[baton: \d+ bytes cut here; the last 10486 bytes of output follow\]/);
    const cut = Number(/\[baton: (\d+) bytes cut here/.exec(text)?.[1]);
    // Said where anyone reads the job, not only on the runner's disk: its reason and its run's.
    const shown = await c.baton('job', 'show', '1');
    assert.equal(shown.code, 0, shown.stderr);
    const said = `job-1-attempt-1\\.log cut at its cap of 20972 bytes \\(baton up --log-max-mb\\): ${cut} bytes`;
    assert.match(
      shown.stdout,
      new RegExp(`attempt 1 on a at .*: done, exit 0 — log .*${said} of output dropped`),
    );
    const json = JSON.parse((await c.baton('job', 'show', '1', '--json')).stdout) as {
      reason: string | null;
    };
    assert.match(json.reason ?? '', new RegExp(said));
    const bad = await c.baton('up', '--log-max-mb', 'lots');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--log-max-mb must be a number above 0, got "lots"/);
  } finally {
    await c.close();
  }
});

test('a run killed after its log was cut at --log-max-mb is requeued saying so, and job show lists it', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    const flood = 'test "$BATON_ATTEMPT" -gt 1 || { seq 1 200000; exec sleep 60; }';
    const { job } = await c.store.jobs.enqueue({ key: 'flood', command: flood });
    c.up('a', '--log-max-mb', '0.02');
    await waitUntil(async () => agentStarted(c.store, 'flood'), 15_000, 'the agent');
    const pid = (await c.store.jobs.get(job.id))?.pid ?? 0;
    // Killed once the runner has counted the 1.3 MB: past the 20 KB cap, its middle cut.
    const counted = async () => {
      const shown = await c.baton('job', 'show', String(job.id), '--json');
      return (
        (JSON.parse(shown.stdout) as { progress: { outputBytes: number } | null }).progress?.outputBytes ?? 0
      );
    };
    await waitUntil(async () => (await counted()) > 1_000_000, 15_000, 'the output counted');
    for (const agent of agentPids(pid)) process.kill(agent, 'SIGKILL');
    await ended(c, 'flood');
    const shown = await c.baton('job', 'show', String(job.id));
    assert.match(
      shown.stdout,
      /attempt 1 on a at .*: requeued — agent killed by SIGKILL.*; log .*job-\d+-attempt-1\.log cut at its cap of 20972 bytes \(baton up --log-max-mb\): \d+ bytes of output dropped/,
    );
    assert.match(shown.stdout, /attempt 2 on a at .*: done, exit 0$/m);
  } finally {
    await c.close();
  }
});

test('a run is reported ended only once its log is written whole: a log that drains slowly keeps its job running', async () => {
  const c = await clusterFixture(sqliteDatabase());
  try {
    // The log is a pipe read only when the test says: the runner's writes wait on it.
    const logs = join(c.dir, '.baton', 'logs');
    mkdirSync(logs, { recursive: true });
    const fifo = join(logs, 'job-1-attempt-1.log');
    execFileSync('mkfifo', [fifo]);
    const idle = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK); // a reader, never reading
    const { job } = await c.store.jobs.enqueue({ key: 'k', command: 'seq 1 100000' }); // 589 KB
    c.up('a');
    await waitUntil(
      async () => {
        const pid = (await c.store.jobs.get(job.id))?.pid;
        return pid != null && !isAlive(pid);
      },
      15_000,
      'the agent to exit',
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal((await c.store.jobs.get(job.id))?.status, 'running', 'its log is not written yet');
    const drained = join(c.dir, 'drained.log');
    const cat = spawn('sh', ['-c', `cat "${fifo}" > "${drained}"`]);
    await new Promise((resolve) => cat.on('close', resolve));
    closeSync(idle);
    await ended(c, 'k');
    assert.equal((await jobOf(c, 'k'))?.status, 'done');
    const lines = readFileSync(drained, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 100_000);
    assert.equal(lines.at(-1), '100000');
  } finally {
    await c.close();
  }
});
