/**
 * The run time limit with real `baton up` processes (docs/decisions/0037-run-time-limit.md): an
 * agent that keeps printing, and so never stalls, is killed once its run passes its limit (its
 * own, `baton enqueue --time-limit`, or its runner's, `baton up --time-limit`), judged on the
 * database clock; its job fails with reason `timed out`, the ledger says so, its process tree is
 * gone. Under the same `baton up`, a job without a limit (or with a longer one of its own) runs on.
 * A job a pull worker took (`baton job next`) and never finishes is failed by the leading `baton up`'s
 * sweep once past its own limit, while the worker's session still beats ("The leader's sweep").
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { treeMembers } from '../../src/os/process-tree.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, STEADY, type ClusterFixture, withCluster } from './cluster-support.js';

/** Prints a line every 100 ms, for ever: never stalled, never done. */
const FOREVER = 'while :; do echo working; sleep 0.1; done';

async function job(c: ClusterFixture, key: string) {
  const [j] = await c.store.jobs.list({ key });
  assert.ok(j !== undefined, `a job for ${key}`);
  return j;
}

/** Waits for the job's agent to start and returns its pid. */
async function agentPid(c: ClusterFixture, key: string): Promise<number> {
  await waitUntil(async () => (await job(c, key)).pid !== null, 15_000, `the agent of ${key} to start`);
  return (await job(c, key)).pid ?? 0;
}

/** The job has failed timed out: its reason, its last two ledger rows, its tree gone, its claim released. */
async function assertTimedOut(c: ClusterFixture, key: string, pid: number, whose: RegExp): Promise<void> {
  await waitUntil(async () => (await job(c, key)).status === 'failed', 20_000, `${key} to fail`);
  const failed = await job(c, key);
  assert.match(failed.reason ?? '', /^timed out: ran past /);
  assert.match(failed.reason ?? '', whose);
  assert.match(failed.reason ?? '', /time limit of 2 s \(started \d{4}-\d\d-\d\dT/);
  const rows = await c.store.audit.list({ jobId: failed.id });
  assert.deepEqual(
    rows.slice(-2).map((e) => e.type),
    ['job:timed_out', 'job:finished'],
  );
  const timedOut = rows.find((e) => e.type === 'job:timed_out');
  assert.equal(timedOut?.detail['limitMs'], 2000);
  assert.ok(Number(timedOut?.detail['ranMs']) >= 2000, 'judged past the limit on the database clock');
  assert.ok(failed.finishedAt !== null && failed.startedAt !== null);
  assert.ok(failed.finishedAt - failed.startedAt >= 2000, 'not before its limit');
  await waitUntil(() => treeMembers(pid).length === 0, 5_000, `the agent tree of ${key} to die`);
  assert.equal((await c.store.tasks.get(key))?.holder, null, 'the claim was released');
}

/**
 * A real pull worker that never finishes: a shell that starts its session (a TTL of 60 s, so no
 * rescue comes first; `--kind daemon` when asked, as a worker may say), takes one job with `baton
 * job next` and then only beats, every 0.5 s. `name` names its files in the fixture's folder.
 */
function hungWorker(
  c: ClusterFixture,
  name = 'worker',
  kind = 'agent',
): { session: () => Promise<string>; stop: () => void } {
  const baton = `"${process.execPath}" "${join(ROOT, 'bin', 'baton.js')}" --db "${c.url}"`;
  const script = `S=$(${baton} session start --ttl 60s --kind ${kind}) || exit 1
echo "$S" > ${name}.session.txt
${baton} job next --session "$S" --json > ${name}.job.json || exit 1
while :; do ${baton} heartbeat "$S" > /dev/null; sleep 0.5; done`;
  const child = spawn('bash', ['-c', script], { cwd: c.dir, stdio: 'ignore', detached: true });
  const session = async (): Promise<string> => {
    const read = () => readFileSync(join(c.dir, `${name}.session.txt`), 'utf8').trim();
    await waitUntil(
      () => {
        try {
          return read() !== '';
        } catch {
          return false;
        }
      },
      15_000,
      'the worker session',
    );
    return read();
  };
  const stop = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL'); // the shell and its baton call
    } catch {
      // already gone (it exits at once if `baton job next` fails): nothing to stop
    }
  };
  return { session, stop };
}

for (const db of bothEngines()) {
  describe(`run time limit (${db.name})`, () => {
    test("kills an agent that prints for ever past its job's --time-limit; a job without one runs on", () =>
      withCluster(db, async (c) => {
        const limited = await c.baton('enqueue', 'forever', '--command', FOREVER, '--time-limit', '2s');
        assert.equal(limited.code, 0, limited.stderr);
        await c.baton('enqueue', 'unlimited', '--command', FOREVER);
        await c.baton('enqueue', 'long', '--command', FOREVER, '--time-limit', '1h');
        const up = c.up('h1', ...STEADY, '--slots', '3'); // all three run at once
        const pid = await agentPid(c, 'forever');
        const otherPid = await agentPid(c, 'unlimited');
        await agentPid(c, 'long');
        const shown = await c.baton('job', 'show', String((await job(c, 'long')).id));
        assert.match(shown.stdout, /time limit 1h, times out at \d{4}-\d\d-\d\dT/);
        await assertTimedOut(c, 'forever', pid, /ran past its time limit/);
        await up.waitForLog(/job \d+ forever: timed out: ran past its time limit of 2 s/);
        const list = await c.baton('queue', 'list');
        assert.match(list.stdout, /TIME_LIMIT/);
        assert.match(list.stdout, /forever\s+failed\s+h1\s.*\s2s\s+timed out: ran past its time limit/);
        assert.match(list.stdout, /long\s+running\s+h1\s.*\s1h\s/);
        const failedShown = await c.baton('job', 'show', String((await job(c, 'forever')).id));
        assert.match(failedShown.stdout, /time limit 2s\n/);
        assert.match(failedShown.stdout, /reason timed out: ran past its time limit of 2 s/);
        // The others started with it; give them twice its limit more.
        await new Promise((r) => setTimeout(r, 4_000));
        for (const key of ['unlimited', 'long']) {
          assert.equal((await job(c, key)).status, 'running', `${key} runs on`);
          assert.deepEqual(await c.store.audit.list({ key, type: 'job:timed_out' }), []);
        }
        assert.ok(treeMembers(otherPid).length > 0, 'the unlimited agent is alive');
      }));

    test("holds a job without a limit of its own to baton up's --time-limit; its own longer one wins", () =>
      withCluster(db, async (c) => {
        await c.baton('enqueue', 'plain', '--command', FOREVER);
        await c.baton('enqueue', 'own', '--command', FOREVER, '--time-limit', '1h');
        c.up('h1', ...STEADY, '--time-limit', '2s');
        const pid = await agentPid(c, 'plain');
        const hosts = await c.baton('hosts', '--json');
        assert.deepEqual(
          (JSON.parse(hosts.stdout) as { name: string; timeLimitMs: number }[]).map((h) => [
            h.name,
            h.timeLimitMs,
          ]),
          [['h1', 2000]],
          "baton hosts shows the runner's time limit",
        );
        await agentPid(c, 'own');
        await assertTimedOut(c, 'plain', pid, /ran past the runner's time limit/);
        await new Promise((r) => setTimeout(r, 2_000));
        assert.equal((await job(c, 'own')).status, 'running', 'its own limit, not the runner’s');
      }));

    test('refuses a bad --time-limit with one line and exit 2, queueing nothing', () =>
      withCluster(db, async (c) => {
        for (const bad of ['0', '-5m', 'abc', '8d']) {
          const refused = await c.baton('enqueue', 'bad', '--command', FOREVER, '--time-limit', bad);
          assert.equal(refused.code, 2, `${bad}: ${refused.stderr}`);
          assert.equal(refused.stdout, '');
          assert.match(refused.stderr, /^baton: --time-limit must be /);
          assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
        }
        assert.deepEqual(await c.store.jobs.list({}), [], 'nothing queued');
        assert.equal(await c.store.tasks.get('bad'), null, 'no task added either');
        const up = await c.baton('up', '--time-limit', 'abc');
        assert.equal(up.code, 2, up.stderr);
        assert.match(up.stderr, /^baton: --time-limit must be a duration/);
      }));

    test('fails a job a pull worker took and never finishes once past its own limit; its late finish exits 3', () =>
      withCluster(db, async (c) => {
        await c.baton('enqueue', 'hung', '--time-limit', '2s');
        const worker = hungWorker(c);
        const stops = [worker.stop];
        try {
          const s = await worker.session();
          await waitUntil(
            async () => (await job(c, 'hung')).status === 'running',
            15_000,
            'the worker to take hung',
          );
          const taken = await job(c, 'hung');
          await c.baton('enqueue', 'hung-daemon-kind', '--time-limit', '2s');
          // A pull worker whose session says `daemon`: not a runner, so swept all the same.
          const daemonKind = hungWorker(c, 'daemon-kind', 'daemon');
          stops.push(daemonKind.stop);
          await daemonKind.session();
          await waitUntil(
            async () => (await job(c, 'hung-daemon-kind')).status === 'running',
            15_000,
            'the daemon-kind worker to take hung-daemon-kind',
          );
          await c.baton('enqueue', 'long', '--time-limit', '1h');
          const other = (await c.baton('session', 'start', '--ttl', '60s')).stdout.trim();
          const long = await c.baton('job', 'next', '--session', other, '--json');
          assert.equal(long.code, 0, long.stderr);
          const up = c.up('h1', ...STEADY);
          await waitUntil(async () => (await job(c, 'hung')).status === 'failed', 20_000, 'hung to fail');
          const failed = await job(c, 'hung');
          assert.match(
            failed.reason ?? '',
            /^timed out: ran past its time limit of 2 s \(started \d{4}-.*\); its worker had not finished it, the leader/,
          );
          assert.ok((failed.finishedAt ?? 0) - (failed.startedAt ?? 0) >= 2000, 'not before its limit');
          const rows = await c.store.audit.list({ jobId: failed.id });
          assert.deepEqual(
            rows.slice(-2).map((e) => e.type),
            ['job:timed_out', 'job:finished'],
          );
          // Both rows are the worker's (its session) and name the leader: `baton up`'s session.
          const leader = (await c.store.hosts.list()).find((host) => host.name === 'h1')?.session;
          assert.ok(leader !== undefined && leader !== null);
          for (const row of rows.slice(-2))
            assert.deepEqual(
              [row.session, row.detail['by'], row.detail['bySession']],
              [Number(s), 'leader', leader],
              row.type,
            );
          assert.equal((await c.store.tasks.get('hung'))?.holder, null, 'the claim was released');
          await up.waitForLog(new RegExp(`time limit: failed job ${failed.id} \\(hung\\): timed out`));
          await waitUntil(
            async () => (await job(c, 'hung-daemon-kind')).status === 'failed',
            20_000,
            'hung-daemon-kind to fail',
          );
          assert.match((await job(c, 'hung-daemon-kind')).reason ?? '', /the leader failed it$/);
          // The worker's session still beats after its job was failed: only the job was taken from it.
          const beats = async () => (await c.store.sessions.get(Number(s)))?.heartbeatAt ?? 0;
          await waitUntil(
            async () => (await beats()) > (failed.finishedAt ?? 0),
            10_000,
            'a heartbeat after',
          );
          assert.equal((await c.store.sessions.get(Number(s)))?.state, 'live');
          const late = await c.baton(
            'job',
            'finish',
            String(taken.id),
            '--session',
            s,
            '--epoch',
            String(taken.epoch),
          );
          assert.equal(late.code, 3, late.stderr);
          const lines = late.stderr.split('\n').filter((line) => line !== '');
          assert.equal(lines.length, 1, late.stderr);
          assert.match(
            lines[0] ?? '',
            /^baton: job \d+ timed out: ran past its time limit of 2 s \(started .*\): the leader failed it .*: it is failed, not done/,
          );
          assert.equal((await job(c, 'long')).status, 'running', 'a pull job within its limit runs on');
          assert.deepEqual(await c.store.audit.list({ key: 'long', type: 'job:timed_out' }), []);
        } finally {
          for (const stop of stops) stop();
        }
      }));
  });
}
