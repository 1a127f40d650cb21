/**
 * `GET /v1/jobs/{id}/log` on both engines, through the real HTTP app on a real store, with the log
 * file in the server's log folder: the bytes from an offset (base64, byte for byte), the next
 * offset and whether the run has ended; the database's kept tail and where the whole log is once
 * the file is not here; an agent token reads its own job's output alone (403 otherwise, with its
 * ledger row), a viewer any; and `baton job log` over the API prints and follows it, and exits 6
 * for a refused token.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { repoRoot } from '../support/cli.js';
import { startTestServer, type TestServer } from '../dashboard/server.js';
import { waitUntil } from '../support/wait.js';
import { wholeNumberWords } from './support.js';
import type { Store } from '../../src/store/store.js';

interface Chunk {
  job: number;
  attempt: number;
  host: string | null;
  source: string;
  file: string;
  offset: number;
  next: number;
  size: number;
  ended: boolean;
  note: string | null;
  data: string;
}

async function get(
  server: TestServer,
  path: string,
  token?: string,
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const response = await fetch(`${server.url}${path}`, { headers });
  return { status: response.status, body: await response.json() };
}

/** What a running `baton job log` has printed on stderr so far. */
interface Live {
  stderr: string;
}

/** `baton job log` over the API with this token: its exit code and what it printed. */
function remoteLog(server: TestServer, token: string, ...args: string[]) {
  return remoteLogLive(server, token, { stderr: '' }, ...args);
}

function remoteLogLive(server: TestServer, token: string, live: Live, ...args: string[]) {
  return new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), 'job', 'log', ...args], {
      cwd: mkdtempSync(join(tmpdir(), 'baton-remote-log-')),
      env: { ...process.env, BATON_URL: server.url, BATON_TOKEN: token, BATON_DB: '' },
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => out.push(data));
    child.stderr.on('data', (data: Buffer) => {
      stderr += data.toString();
      live.stderr = stderr;
    });
    // A follower that never ends fails the test rather than hang it.
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr });
    });
  });
}

/** Job `k` started by a runner on box-1, its agent in a session of its own (pid 4). */
async function startedOnBox1(store: Store) {
  const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 2 });
  await store.jobs.enqueue({ key: 'k' });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  assert.ok(job !== null);
  const guard = { id: job.id, session: runner.id, epoch: job.epoch };
  await store.dispatch.attach({ ...guard, agentSession: agent.id, pid: 4 });
  return { agent, job, guard };
}

for (const db of bothEngines()) {
  describe(`GET /v1/jobs/{id}/log on ${db.engine}`, () => {
    test(
      'answers the log from an offset, the tail once the file is gone, and only to tokens that may read it',
      { timeout: 60_000 },
      async () => {
        const logDir = join(mkdtempSync(join(tmpdir(), 'baton-log-route-')), 'logs');
        const server = await startTestServer(await db.fresh(), undefined, { logDir });
        try {
          const { store } = server;
          const { agent, job, guard } = await startedOnBox1(store);
          const other = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
          // Not text: bytes that are no UTF-8 come back as they are.
          const content = Buffer.concat([
            Buffer.from('compiling\n'),
            Buffer.from([0xff, 0xfe, 0x0a]),
            Buffer.from('é\n'),
          ]);
          mkdirSync(logDir, { recursive: true });
          writeFileSync(join(logDir, `job-${job.id}-attempt-1.log`), content);
          const own = (await store.tokens.create({ scope: 'agent', session: agent.id })).secret;
          const stranger = (await store.tokens.create({ scope: 'agent', session: other.id })).secret;
          const viewer = (await store.tokens.create({ scope: 'viewer' })).secret;
          const host = (await store.tokens.create({ scope: 'host', host: 'box-1' })).secret;

          const whole = await get(server, `/v1/jobs/${job.id}/log`, viewer);
          assert.equal(whole.status, 200, JSON.stringify(whole.body));
          const first = whole.body as Chunk;
          assert.deepEqual(
            { ...first, data: Buffer.from(first.data, 'base64') },
            {
              job: job.id,
              attempt: 1,
              host: 'box-1',
              source: 'file',
              file: `job-${job.id}-attempt-1.log`,
              offset: 0,
              next: content.length,
              size: content.length,
              ended: false,
              note: null,
              data: content,
            },
          );
          const rest = (await get(server, `/v1/jobs/${job.id}/log?attempt=1&offset=10`, own)).body as Chunk;
          assert.deepEqual(Buffer.from(rest.data, 'base64'), content.subarray(10));
          assert.equal(rest.next, content.length);
          assert.equal(
            (await get(server, `/v1/jobs/${job.id}/log`)).status,
            200,
            'an open read, as the dashboard',
          );

          for (const [token, reason] of [
            [stranger, `this agent token is bound to session ${other.id}, not ${agent.id}`],
            [host, "a host token may not read a job's output"],
          ] as const) {
            const refused = await get(server, `/v1/jobs/${job.id}/log`, token);
            assert.equal(refused.status, 403);
            assert.match(JSON.stringify(refused.body), new RegExp(reason));
          }
          const rows = await store.audit.list({ type: 'auth:refused' });
          assert.equal(rows.length, 2);
          assert.match(JSON.stringify(rows[0]?.detail), new RegExp(`GET /v1/jobs/${job.id}/log`));
          const remote = await remoteLog(server, stranger, String(job.id));
          assert.equal(remote.code, 6, remote.stderr);
          assert.equal(remote.stdout.length, 0);
          const mine = await remoteLog(server, own, String(job.id));
          assert.equal(mine.code, 0, mine.stderr);
          assert.deepEqual(mine.stdout, content, 'byte for byte over the API');

          // Followed over the API: what is appended is printed, and the follower ends with the run.
          const follower = remoteLog(server, own, String(job.id), '--follow');
          await new Promise((resolve) => setTimeout(resolve, 500));
          appendFileSync(join(logDir, `job-${job.id}-attempt-1.log`), 'linked\n');
          await store.jobs.finish({
            ...guard,
            status: 'failed',
            exitCode: 2,
            outputTail: 'é, the last line\n',
          });
          const followed = await follower;
          assert.equal(followed.code, 0, followed.stderr);
          assert.deepEqual(followed.stdout, Buffer.concat([content, Buffer.from('linked\n')]));
          rmSync(join(logDir, `job-${job.id}-attempt-1.log`));
          const tail = (await get(server, `/v1/jobs/${job.id}/log`, viewer)).body as Chunk;
          assert.equal(tail.source, 'database');
          assert.equal(tail.ended, true);
          assert.equal(Buffer.from(tail.data, 'base64').toString(), 'é, the last line\n');
          assert.equal(
            tail.note,
            `the output is in job-${job.id}-attempt-1.log on box-1's disk (its log folder), which this process cannot read`,
          );

          const many = Number.MAX_SAFE_INTEGER;
          const bad: [string, number, RegExp | string][] = [
            [`/v1/jobs/${job.id}/log?attempt=0`, 400, wholeNumberWords('attempt', 1, many, '0')],
            [`/v1/jobs/${job.id}/log?attempt=01`, 400, wholeNumberWords('attempt', 1, many, '01')],
            [`/v1/jobs/${job.id}/log?offset=-1`, 400, wholeNumberWords('offset', 0, many, '-1')],
            [`/v1/jobs/${job.id}/log?offset=1e1`, 400, wholeNumberWords('offset', 0, many, '1e1')],
            [`/v1/jobs/${job.id}/log?attempt=2`, 404, /job \d+ attempt 2 not found/],
            ['/v1/jobs/999/log', 404, /job 999 not found/],
          ];
          for (const [path, status, message] of bad) {
            const answer = await get(server, path, viewer);
            assert.equal(answer.status, status, path);
            const said = (answer.body as { error: { message: string } }).error.message;
            if (typeof message === 'string') assert.equal(said, message, path);
            else assert.match(said, message, path);
          }
        } finally {
          await server.close();
        }
      },
    );

    test("an agent token sees no other job's output: not in job JSON, the task, the job page or its fragment", async () => {
      const logDir = join(mkdtempSync(join(tmpdir(), 'baton-log-route-')), 'logs');
      const server = await startTestServer(await db.fresh(), undefined, { logDir }, 'required');
      try {
        const { store } = server;
        const { agent, job, guard } = await startedOnBox1(store);
        const other = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
        mkdirSync(logDir, { recursive: true });
        writeFileSync(join(logDir, `job-${job.id}-attempt-1.log`), 'SECRET-OF-K in its log\n');
        await store.jobs.finish({ ...guard, status: 'failed', exitCode: 1, outputTail: 'TAIL-OF-K\n' });
        const own = (await store.tokens.create({ scope: 'agent', session: agent.id })).secret;
        const stranger = (await store.tokens.create({ scope: 'agent', session: other.id })).secret;
        const viewer = (await store.tokens.create({ scope: 'viewer' })).secret;
        const text = async (path: string, token: string): Promise<string> => {
          const response = await fetch(`${server.url}${path}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(response.status, 200, path);
          return response.text();
        };
        const tailOf = async (token: string) => {
          const one = (await get(server, `/v1/jobs/${job.id}`, token)).body as { outputTail: string | null };
          const all = (await get(server, '/v1/jobs', token)).body as {
            id: number;
            outputTail: string | null;
          }[];
          const task = (await get(server, '/v1/tasks/k', token)).body as {
            jobs: { outputTail: string | null }[];
          };
          return [
            one.outputTail,
            all.find((entry) => entry.id === job.id)?.outputTail,
            task.jobs[0]?.outputTail,
          ];
        };
        assert.deepEqual(await tailOf(stranger), [null, null, null]);
        assert.deepEqual(await tailOf(own), ['TAIL-OF-K\n', 'TAIL-OF-K\n', 'TAIL-OF-K\n']);
        assert.deepEqual(await tailOf(viewer), ['TAIL-OF-K\n', 'TAIL-OF-K\n', 'TAIL-OF-K\n']);
        for (const path of [`/jobs/${job.id}`, `/ui/frag/output/${job.id}`]) {
          const page = await text(path, stranger);
          assert.doesNotMatch(page, /SECRET-OF-K|TAIL-OF-K/, path);
          assert.match(page, /not shown: this token may read only its own job/, path);
          assert.match(await text(path, own), /SECRET-OF-K/, `${path}, its own agent`);
          assert.match(await text(path, viewer), /SECRET-OF-K/, `${path}, a viewer`);
        }
      } finally {
        await server.close();
      }
    });

    test("an agent token reads its own run's log alone: not the attempt before it, another agent's run", async () => {
      const logDir = join(mkdtempSync(join(tmpdir(), 'baton-log-route-')), 'logs');
      const server = await startTestServer(await db.fresh(), undefined, { logDir });
      try {
        const { store } = server;
        const { job, guard } = await startedOnBox1(store);
        mkdirSync(logDir, { recursive: true });
        writeFileSync(join(logDir, `job-${job.id}-attempt-1.log`), 'what the first agent saw\n');
        const policy = { backoffBaseMs: 0, backoffMaxMs: 0 };
        assert.ok((await store.dispatch.requeue({ ...guard, reason: 'its host died', policy })).ok);
        const runner = guard.session;
        const second = await store.jobs.claimNext({ session: runner, start: true });
        assert.equal(second?.attempt, 2);
        const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 5 });
        await store.dispatch.attach({
          id: job.id,
          session: runner,
          epoch: second.epoch,
          agentSession: agent.id,
          pid: 6,
        });
        writeFileSync(join(logDir, `job-${job.id}-attempt-2.log`), 'what the second agent saw\n');
        const own = (await store.tokens.create({ scope: 'agent', session: agent.id })).secret;
        const viewer = (await store.tokens.create({ scope: 'viewer' })).secret;
        const read = async (attempt: number, token: string) =>
          get(server, `/v1/jobs/${job.id}/log?attempt=${attempt}`, token);
        assert.equal((await read(2, own)).status, 200, 'its own run');
        const earlier = await read(1, own);
        assert.equal(earlier.status, 403, 'the run before it, another agent session');
        assert.match(JSON.stringify(earlier.body), /read the output of job \d+ \(attempt 1\)/);
        assert.equal((await read(1, viewer)).status, 200, 'a viewer reads every attempt');
      } finally {
        await server.close();
      }
    });

    test(
      "a follower of a run whose log is on another host's disk says so, then prints the database's tail once it ends",
      { timeout: 60_000 },
      async () => {
        // This server's log folder is empty: the run's log is on box-1's disk.
        const logDir = join(mkdtempSync(join(tmpdir(), 'baton-log-route-')), 'logs');
        const server = await startTestServer(await db.fresh(), undefined, { logDir });
        try {
          const { store } = server;
          const { job, guard } = await startedOnBox1(store);
          const viewer = (await store.tokens.create({ scope: 'viewer' })).secret;
          const live = { stderr: '' };
          const follower = remoteLogLive(server, viewer, live, String(job.id), '--follow');
          const where = `job-${job.id}-attempt-1.log on box-1's disk (its log folder), which this process cannot read`;
          await waitUntil(() => live.stderr !== '', 20_000, 'the follower to say why it sees nothing');
          assert.equal(
            live.stderr,
            `baton: job ${job.id} attempt 1 runs on box-1 and has streamed no output yet: following its output ` +
              `stream in the database until the run ends (the whole log is job-${job.id}-attempt-1.log on box-1's disk)\n`,
          );
          await store.jobs.finish({ ...guard, status: 'failed', exitCode: 1, outputTail: 'last words\n' });
          const followed = await follower;
          assert.equal(followed.code, 0, followed.stderr);
          assert.equal(followed.stdout.toString(), 'last words\n');
          assert.equal(
            followed.stderr.split('\n')[1],
            `baton: job ${job.id} attempt 1: above: the last lines the database keeps; the output is in ${where}`,
          );
        } finally {
          await server.close();
        }
      },
    );
  });
}
