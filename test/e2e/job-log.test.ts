/**
 * `baton job log`: an operator's view of what an agent prints, from the terminal, against a real
 * `baton up` on SQLite running real agent commands. A follower started before the job runs prints
 * every byte as the file holds it and ends once the run has; the plain form prints the whole file;
 * each attempt of a retried job has its own log; where the log is not on this machine the output
 * its runner streamed into the database is printed (docs/decisions/0029), and for an earlier
 * attempt, whose stream is not kept, stderr says where the whole log is; bad input changes
 * nothing and prints nothing on stdout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture, ROOT, type ClusterFixture } from './cluster-support.js';

interface Ran {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** When stdout first had something, in ms (Date.now). */
  readonly firstOutputAt: number | null;
}

/** `baton --db <url> <args>` in `cwd`, its stdout kept as bytes. */
function baton(c: ClusterFixture, cwd: string, ...args: string[]): Promise<Ran> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'baton.js'), '--db', c.url, ...args], { cwd });
  const out: Buffer[] = [];
  let stderr = '';
  let firstOutputAt: number | null = null;
  child.stdout.on('data', (data: Buffer) => {
    firstOutputAt ??= Date.now();
    out.push(data);
  });
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  // A follower that never ends fails the test rather than hang it.
  const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr, firstOutputAt });
    }),
  );
}

/** Whether a `baton job log` process has the database file open. */
function opened(path: string): boolean {
  return readdirSync('/proc').some((pid) => {
    if (!/^\d+$/.test(pid) || !readSafe(`/proc/${pid}/cmdline`).includes('job\u0000log')) return false;
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSafe(`/proc/${pid}/fd/${fd}`) === path);
    } catch {
      return false;
    }
  });
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function readlinkSafe(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

const ended = async (c: ClusterFixture, id: number): Promise<void> =>
  waitUntil(
    async () => !['queued', 'claimed', 'running'].includes((await c.store.jobs.get(id))?.status ?? 'queued'),
    30_000,
    `job ${id} to end`,
  );

test(
  'baton job log --follow, started before the job runs, prints every byte as it comes and exits 0 once the job has ended',
  { timeout: 60_000 },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const agent = 'for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.3; done; printf "\\377 not UTF-8\\n"';
      const { job } = await c.store.jobs.enqueue({ key: 'k', command: agent });
      // Another database's job of the same id left its log here: it is not this job's output.
      const logs = join(c.dir, '.baton', 'logs');
      const path = join(logs, `job-${job.id}-attempt-1.log`);
      mkdirSync(logs, { recursive: true });
      writeFileSync(path, 'foreign output\n');
      utimesSync(path, new Date(job.queuedAt - 60_000), new Date(job.queuedAt - 60_000));
      const follower = baton(c, c.dir, 'job', 'log', String(job.id), '--follow');
      await new Promise((resolve) => setTimeout(resolve, 700)); // the follower waits on a queued job
      const up = c.up('solo');
      const followed = await follower;
      assert.equal(followed.code, 0, `${followed.stderr}\n${up.log()}`);
      const done = await c.store.jobs.get(job.id);
      assert.equal(done?.status, 'done', 'it ended only once the job had');
      const file = readFileSync(path);
      const lines = [1, 2, 3, 4, 5, 6].map((line) => `line ${line}\n`).join('');
      assert.deepEqual(
        file,
        Buffer.concat([Buffer.from(lines), Buffer.from([0xff]), Buffer.from(' not UTF-8\n')]),
      );
      assert.deepEqual(followed.stdout, file, 'every byte, in order, and nothing of the foreign file');
      assert.equal(followed.stderr, '');
      assert.ok(
        (followed.firstOutputAt ?? Infinity) < (done?.finishedAt ?? 0),
        'the first lines were printed while the agent still ran',
      );
      assert.ok(readdirSync(logs).some((name) => /^job-1-attempt-1\.before-\d+\.log$/.test(name)));
      // Beside the folder, its host: a reader here tells this host's runs' logs from dead ones.
      assert.equal(readFileSync(`${logs}.host`, 'utf8'), 'solo\n');
      const whole = await baton(c, c.dir, 'job', 'log', String(job.id));
      assert.equal(whole.code, 0, whole.stderr);
      assert.deepEqual(whole.stdout, file);
      const json = await baton(c, c.dir, 'job', 'log', String(job.id), '--json');
      assert.deepEqual(JSON.parse(json.stdout.toString()), {
        job: job.id,
        attempt: 1,
        host: 'solo',
        source: 'file',
        file: 'job-1-attempt-1.log',
        ended: true,
        note: null,
        text: file.toString('utf8'),
      });
    } finally {
      await c.close();
    }
  },
);

test(
  'a follower prints a log cut at --log-max-mb whole: its head, the markers and its tail',
  { timeout: 60_000 },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const { job } = await c.store.jobs.enqueue({ key: 'flood', command: 'seq 1 200000' });
      const follower = baton(c, c.dir, 'job', 'log', String(job.id), '-f', '--json');
      c.up('solo', '--log-max-mb', '0.02');
      const followed = await follower;
      assert.equal(followed.code, 0, followed.stderr);
      const file = readFileSync(join(c.dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`), 'utf8');
      assert.match(
        file,
        /\[baton: \d+ bytes cut here; the last 10486 bytes of output follow\]\n[\d\n]+200000\n$/,
      );
      const chunks = followed.stdout
        .toString()
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { text: string; ended?: boolean; source: string });
      assert.equal(chunks.map((chunk) => chunk.text).join(''), file);
      assert.deepEqual(chunks.at(-1), {
        job: job.id,
        attempt: 1,
        host: 'solo',
        source: 'file',
        file: `job-${job.id}-attempt-1.log`,
        ended: true,
        note: null,
        text: '',
      });
    } finally {
      await c.close();
    }
  },
);

test(
  'each attempt of a retried job has its log; a log not on this machine prints its stream, an earlier attempt where it is; bad input prints nothing',
  { timeout: 60_000 },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const retried = 'echo "attempt $BATON_ATTEMPT"; test "$BATON_ATTEMPT" -gt 1 || kill -KILL $$';
      const { job } = await c.store.jobs.enqueue({ key: 'retried', command: retried });
      const { job: failing } = await c.store.jobs.enqueue({
        key: 'failing',
        command: 'echo one; echo two; exit 3',
      });
      const up = c.up('solo', '--slots', '2');
      await ended(c, failing.id);
      await waitUntil(async () => (await c.store.jobs.get(job.id))?.attempt === 2, 30_000, 'the retry');
      await ended(c, job.id);
      assert.equal((await c.store.jobs.get(job.id))?.status, 'done', up.log());
      const id = String(job.id);
      for (const [args, text] of [
        [['--attempt', '1'], 'attempt 1\n'],
        [['--attempt', '2'], 'attempt 2\n'],
        [[], 'attempt 2\n'],
        [['--attempt', '1', '--follow'], 'attempt 1\n'],
      ] as const) {
        const shown = await baton(c, c.dir, 'job', 'log', id, ...args);
        assert.equal(shown.code, 0, shown.stderr);
        assert.equal(shown.stdout.toString(), text, args.join(' '));
      }

      // From a directory with no logs: the output its runner streamed into the database, whole
      // (nothing skipped, so nothing said); the kept tail of a failed run is for runs without a
      // stream (test/http/job-log.test.ts).
      const elsewhere = mkdtempSync(join(tmpdir(), 'baton-elsewhere-'));
      const away = await baton(c, elsewhere, 'job', 'log', String(failing.id));
      assert.equal(away.code, 0, away.stderr);
      assert.equal(away.stdout.toString(), 'one\ntwo\n');
      assert.equal(away.stderr, '');
      const json = await baton(c, elsewhere, 'job', 'log', String(failing.id), '--json');
      assert.equal((JSON.parse(json.stdout.toString()) as { source: string }).source, 'stream');
      const lost = await baton(c, elsewhere, 'job', 'log', id, '--attempt', '1');
      assert.equal(lost.stdout.length, 0, 'an earlier attempt: the database keeps nothing of it');
      assert.match(lost.stderr, new RegExp(`the output is in job-${id}-attempt-1\\.log on solo's disk`));

      const ledger = (await c.store.audit.list({ jobId: job.id })).length;
      const bad: [string[], number, RegExp][] = [
        [['99'], 4, /^baton: job 99 not found — list jobs with `baton queue list`\n$/],
        [[id, '--attempt', '0'], 2, /^baton: --attempt must be a whole number of 1 or more, got "0" — .*\n$/],
        [
          [id, '--attempt', 'two'],
          2,
          /^baton: --attempt must be a whole number of 1 or more, got "two" — .*\n$/,
        ],
        [
          [id, '--attempt', '3'],
          4,
          /^baton: job \d+ attempt 3 not found — job \d+ has had attempts 1 to 2: .*\n$/,
        ],
        [[id, '--attempt', '3', '--follow'], 4, /attempt 3 not found/],
      ];
      for (const [args, code, message] of bad) {
        const refused = await baton(c, c.dir, 'job', 'log', ...args);
        assert.equal(refused.code, code, `${args.join(' ')}: ${refused.stderr}`);
        assert.match(refused.stderr, message);
        assert.equal(refused.stdout.length, 0);
      }
      assert.equal((await c.store.audit.list({ jobId: job.id })).length, ledger, 'nothing written');
    } finally {
      await c.close();
    }
  },
);

test(
  'a follower goes on through a run given back on a graceful stop, to the end of its rerun in the same log',
  { timeout: 60_000 },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const mark = join(c.dir, 'ran-once');
      const agent = `test -e "${mark}" && { echo second run; exit 0; }; touch "${mark}"; echo first run; exec sleep 60`;
      const { job } = await c.store.jobs.enqueue({ key: 'k', command: agent });
      const first = c.up('solo');
      await waitUntil(async () => agentStarted(c.store, 'k'), 15_000, 'the first run');
      const follower = baton(c, c.dir, 'job', 'log', String(job.id), '--follow');
      first.signal('SIGTERM');
      await first.exited();
      const given = await c.store.jobs.get(job.id);
      assert.deepEqual([given?.status, given?.attempt], ['queued', 0], 'the attempt was given back');
      c.up('solo');
      const followed = await follower;
      assert.equal(followed.code, 0, followed.stderr);
      const file = readFileSync(join(c.dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`));
      assert.equal(file.toString(), 'first run\nsecond run\n');
      assert.deepEqual(followed.stdout, file);
      assert.equal((await c.store.jobs.get(job.id))?.status, 'done');
    } finally {
      await c.close();
    }
  },
);

test(
  'a follower of a queued job cancelled before it runs exits 0 saying so',
  { timeout: 60_000 },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const { job } = await c.store.jobs.enqueue({ key: 'k', command: 'echo never' });
      const follower = baton(c, c.dir, 'job', 'log', String(job.id), '--follow');
      // Cancelled once the follower has the database open: it waits for attempt 1 by then.
      await waitUntil(() => opened(c.url), 20_000, 'the follower to open the database');
      assert.equal((await c.baton('cancel', String(job.id))).code, 0);
      const followed = await follower;
      assert.equal(followed.code, 0, followed.stderr);
      assert.equal(followed.stdout.length, 0);
      assert.equal(
        followed.stderr,
        `baton: job ${job.id} attempt 1: job ${job.id} ended before attempt 1 ran\n`,
      );
      const plain = await baton(c, c.dir, 'job', 'log', String(job.id));
      assert.equal(plain.code, 4, 'it never ran: nothing to print');
      assert.match(plain.stderr, /has not run yet/);
    } finally {
      await c.close();
    }
  },
);
