/**
 * The output stream (docs/decisions/0029-live-output.md) end to end: a real `baton up` on
 * PostgreSQL runs a real agent, and `baton job log` runs in another directory, whose log folder
 * holds nothing of it (a laptop's view of a server's run). The follower prints the agent's lines
 * as the runner copies them into the database, long before the run ends, and every byte of the
 * runner's log file in order by the end; `--tail N` prints the last N lines, from the file and from
 * the stream alike; a chatty agent's stream keeps its window, and a reader from 0 is told how
 * many bytes it skipped; a bad N exits 2 with one line and prints nothing. A follower on another
 * host of a run that has streamed nothing yet says it follows the stream (not that the output
 * cannot be read), and a one-off read then still says where the whole log is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresDatabase, postgresServers } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture, ROOT, type ClusterFixture } from './cluster-support.js';

interface Ran {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** When stdout first had something, in ms (Date.now). */
  readonly firstOutputAt: number | null;
}

/** `baton --db <url> job log <args>` in `cwd`, its stdout kept as bytes; `stderrNow` what it said so far. */
function jobLog(c: ClusterFixture, cwd: string, ...args: string[]): Promise<Ran> & { stderrNow(): string } {
  const bin = join(ROOT, 'bin', 'baton.js');
  const child = spawn(process.execPath, [bin, '--db', c.url, 'job', 'log', ...args], { cwd });
  const out: Buffer[] = [];
  let stderr = '';
  let firstOutputAt: number | null = null;
  child.stdout.on('data', (data: Buffer) => {
    firstOutputAt ??= Date.now();
    out.push(data);
  });
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 40_000); // a follower that never ends fails
  const ran = new Promise<Ran>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr, firstOutputAt });
    }),
  );
  return Object.assign(ran, { stderrNow: () => stderr });
}

const ended = (c: ClusterFixture, id: number): Promise<void> =>
  waitUntil(
    async () => !['queued', 'claimed', 'running'].includes((await c.store.jobs.get(id))?.status ?? 'queued'),
    30_000,
    `job ${id} to end`,
  );

const lastLines = (text: string, n: number): string => `${text.trimEnd().split('\n').slice(-n).join('\n')}\n`;

const server = postgresServers()[0];

test(
  "a follower in another directory prints a PostgreSQL runner's output while it runs, every byte by the end",
  { timeout: 90_000, skip: server === undefined ? 'no PostgreSQL server' : false },
  async () => {
    const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
    try {
      const away = mkdtempSync(join(tmpdir(), 'baton-laptop-'));
      const agent =
        'for i in $(seq 1 12); do echo "line $i of the agent"; sleep 0.3; done; printf "\\377 end\\n"';
      const { job } = await c.store.jobs.enqueue({ key: 'k', command: agent });
      const follower = jobLog(c, away, String(job.id), '--follow');
      await new Promise((resolve) => setTimeout(resolve, 500)); // the follower waits on a queued job
      const up = c.up('box-1');
      const followed = await follower;
      assert.equal(followed.code, 0, `${followed.stderr}\n${up.log()}`);
      const done = await c.store.jobs.get(job.id);
      assert.equal(done?.status, 'done', up.log());
      const file = readFileSync(join(c.dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`));
      assert.match(file.toString('latin1'), /^line 1 of the agent\n[^]*line 12 of the agent\n\xff end\n$/);
      assert.deepEqual(followed.stdout, file, 'every byte of the file, in order');
      const lead = (done?.finishedAt ?? 0) - (followed.firstOutputAt ?? Infinity);
      assert.ok(lead > 1000, `the first line printed ${lead} ms before the job finished, not over 1 s`);
      assert.equal(followed.stderr, '');

      // --tail: the last lines, from the file (the runner's directory) and from the stream (away).
      const text = file.toString('latin1');
      for (const cwd of [c.dir, away]) {
        const tail = await jobLog(c, cwd, String(job.id), '--tail', '3');
        assert.equal(tail.code, 0, tail.stderr);
        assert.equal(tail.stdout.toString('latin1'), lastLines(text, 3), cwd);
        const followTail = await jobLog(c, cwd, String(job.id), '--tail', '1', '--follow');
        assert.equal(followTail.code, 0, followTail.stderr);
        assert.equal(followTail.stdout.toString('latin1'), '\xff end\n');
      }
      const json = await jobLog(c, away, String(job.id), '--json');
      assert.equal((JSON.parse(json.stdout.toString()) as { source: string }).source, 'stream');
      const more = await jobLog(c, away, String(job.id), '--tail', '100');
      assert.deepEqual(more.stdout, file, 'more lines than the log has: all of it');

      for (const bad of ['0', '-2', 'ten', '1.5']) {
        const refused = await jobLog(c, away, String(job.id), '--tail', bad);
        assert.equal(refused.code, 2, `--tail ${bad}: ${refused.stderr}`);
        assert.equal(refused.stdout.length, 0);
        assert.match(
          refused.stderr,
          /^baton: --tail must be a whole number of 1 or more, got "[^"]*" — .*\n$/,
        );
      }
    } finally {
      await c.close();
    }
  },
);

test(
  "a chatty agent's stream keeps its window; a reader from its start is told what it skipped",
  { timeout: 90_000, skip: server === undefined ? 'no PostgreSQL server' : false },
  async () => {
    const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
    try {
      const away = mkdtempSync(join(tmpdir(), 'baton-laptop-'));
      // 3 MB of numbered lines over about 1.5 s: more than the window between two flushes.
      const agent = 'for i in 1 2 3; do seq -f "%07g" $(( (i-1)*125000+1 )) $(( i*125000 )); sleep 0.5; done';
      const { job } = await c.store.jobs.enqueue({ key: 'chatty', command: agent });
      const up = c.up('box-1');
      await ended(c, job.id);
      assert.equal((await c.store.jobs.get(job.id))?.status, 'done', up.log());
      const file = readFileSync(join(c.dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`));
      assert.equal(file.length, 3_000_000);
      const read = await jobLog(c, away, String(job.id));
      assert.equal(read.code, 0, read.stderr);
      const kept = read.stdout.length;
      assert.ok(kept >= 64 * 1024 && kept < 128 * 1024, `an ended run keeps its last 64 KiB or so (${kept})`);
      assert.deepEqual(read.stdout, file.subarray(file.length - kept), 'the end of the file, byte for byte');
      assert.match(
        read.stderr,
        new RegExp(
          `^baton: job ${job.id} attempt 1: ${file.length - kept} bytes skipped: the database keeps the last ` +
            `1048576 bytes of a running attempt \\(65536 once it ended\\); the output is in ` +
            `job-${job.id}-attempt-1\\.log on box-1's disk \\(its log folder\\), which this process cannot read\\n$`,
        ),
      );
      const tail = await jobLog(c, away, String(job.id), '--tail', '2');
      assert.equal(tail.stdout.toString(), '0374999\n0375000\n');
    } finally {
      await c.close();
    }
  },
);

test(
  'a follower on another host of a run that streamed nothing yet says it follows the stream, then prints it',
  { timeout: 90_000, skip: server === undefined ? 'no PostgreSQL server' : false },
  async () => {
    const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
    try {
      // box-2's machine: a `baton up` there once, so its log folder is box-2's (a laptop's is no one's).
      const away = mkdtempSync(join(tmpdir(), 'baton-box-2-'));
      const marked = join(away, '.baton', 'logs.host');
      const box2 = c.upAt(away, {}, 'box-2', ['--drain', '0']);
      await waitUntil(() => existsSync(marked), 30_000, "box-2's log folder to be marked");
      box2.signal('SIGTERM');
      await box2.exited();
      assert.equal(readFileSync(marked, 'utf8'), 'box-2\n');
      // Silent until the test lets it go on: a follower's quiet reads come first, then the lines.
      const go = join(c.dir, 'go');
      const agent = `while [ ! -e ${go} ]; do sleep 0.1; done; echo "line 1 of the agent"; echo "line 2"`;
      const { job } = await c.store.jobs.enqueue({ key: 'quiet', command: agent });
      const up = c.up('box-1');
      await waitUntil(async () => agentStarted(c.store, 'quiet'), 30_000, 'the agent to start');
      const follower = jobLog(c, away, String(job.id), '--follow');
      const said =
        `baton: job ${job.id} attempt 1 runs on box-1 and has streamed no output yet: following its output ` +
        `stream in the database until the run ends (the whole log is job-${job.id}-attempt-1.log on box-1's disk)\n`;
      // A one-off read meanwhile: nothing yet, and where the whole log is, as before.
      const once = await jobLog(c, away, String(job.id));
      assert.equal(once.code, 0, once.stderr);
      assert.equal(once.stdout.length, 0);
      assert.equal(
        once.stderr,
        `baton: job ${job.id} attempt 1: the output is in job-${job.id}-attempt-1.log on box-1's disk ` +
          '(its log folder), which this process cannot read\n',
      );
      await waitUntil(() => follower.stderrNow() !== '', 30_000, 'the follower to say why it sees nothing');
      assert.equal(follower.stderrNow(), said);
      writeFileSync(go, '');
      const followed = await follower;
      assert.equal(followed.code, 0, `${followed.stderr}\n${up.log()}`);
      assert.equal((await c.store.jobs.get(job.id))?.status, 'done', up.log());
      const file = readFileSync(join(c.dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`));
      assert.equal(file.toString(), 'line 1 of the agent\nline 2\n');
      assert.deepEqual(followed.stdout, file, 'every byte, from the stream');
      assert.equal(followed.stderr, said, 'said once, and nothing saying it cannot be read');
    } finally {
      await c.close();
    }
  },
);
