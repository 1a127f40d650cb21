/**
 * The output stream over HTTP (docs/decisions/0029-live-output.md), on both engines, through the
 * real HTTP app on a real store whose log folder holds nothing of the run (its runner is another
 * host, which streamed its output into the database as `baton up` does: store.output.append under
 * its session and the job's epoch). `GET /v1/jobs/{id}/log` answers the streamed bytes at the
 * file's offsets, `source: stream`; the guards of output hold for it: an agent token reads its own
 * run's stream alone, and the job page and its live fragment show the stream to those who may read
 * it, with where the whole log is; `baton job log --tail` and `--follow` over the API read it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outputRows } from '../../src/core/output-stream.js';
import { bothEngines } from '../support/databases.js';
import { repoRoot } from '../support/cli.js';
import { startTestServer, type TestServer } from '../dashboard/server.js';
import type { Store } from '../../src/store/store.js';

/** `baton job log` over the API with this token: its exit code and what it printed. */
function remoteLog(server: TestServer, token: string, ...args: string[]) {
  return remoteLogSeen(server, token, () => undefined, ...args);
}

/** The same, telling `seen` what it has printed so far each time it prints. */
function remoteLogSeen(server: TestServer, token: string, seen: (stdout: string) => void, ...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), 'job', 'log', ...args], {
      cwd: mkdtempSync(join(tmpdir(), 'baton-remote-log-')),
      env: { ...process.env, BATON_URL: server.url, BATON_TOKEN: token, BATON_DB: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
      seen(stdout);
    });
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // a follower that never ends fails
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
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
  /** What box-1's runner does with what the agent's log gained. */
  const stream = async (offset: number, text: string, ended = false) => {
    const run = { job: job.id, attempt: 1, epoch: job.epoch, offset, bytes: Buffer.from(text), ended };
    assert.deepEqual(await store.output.append({ session: runner.id, rows: outputRows([run]) }), [job.id]);
  };
  return { agent, job, guard, stream };
}

for (const db of bothEngines()) {
  describe(`the output stream over HTTP on ${db.engine}`, () => {
    test('reads a run on another host from the stream, to the tokens that may read its output', async () => {
      const logDir = join(mkdtempSync(join(tmpdir(), 'baton-log-stream-')), 'logs');
      const server = await startTestServer(await db.fresh(), undefined, { logDir }, 'required');
      try {
        const { store } = server;
        const { agent, job, guard, stream } = await startedOnBox1(store);
        await stream(0, 'step 1\nSECRET-OF-K\n');
        const other = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
        const own = (await store.tokens.create({ scope: 'agent', session: agent.id })).secret;
        const stranger = (await store.tokens.create({ scope: 'agent', session: other.id })).secret;
        const viewer = (await store.tokens.create({ scope: 'viewer' })).secret;
        const get = async (path: string, token: string) => {
          const response = await fetch(`${server.url}${path}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          return { status: response.status, text: await response.text() };
        };

        const read = await get(`/v1/jobs/${job.id}/log?offset=7`, viewer);
        assert.equal(read.status, 200, read.text);
        const chunk = JSON.parse(read.text) as Record<string, unknown>;
        assert.deepEqual(
          { ...chunk, data: Buffer.from(String(chunk['data']), 'base64').toString() },
          {
            job: job.id,
            attempt: 1,
            host: 'box-1',
            source: 'stream',
            file: `job-${job.id}-attempt-1.log`,
            offset: 7,
            next: 19,
            size: 19,
            ended: false,
            note: null,
            data: 'SECRET-OF-K\n',
            run: { epoch: 1, from: 0 }, // the run whose bytes the stream holds: its first placement's
          },
        );
        assert.equal((await get(`/v1/jobs/${job.id}/log`, own)).status, 200, 'its own agent');
        const refused = await get(`/v1/jobs/${job.id}/log`, stranger);
        assert.equal(refused.status, 403, 'another agent');
        assert.doesNotMatch(refused.text, /SECRET-OF-K/);

        for (const path of [`/jobs/${job.id}`, `/ui/frag/output/${job.id}`]) {
          const hidden = await get(path, stranger);
          assert.equal(hidden.status, 200, path);
          assert.doesNotMatch(hidden.text, /SECRET-OF-K/, path);
          for (const token of [own, viewer]) {
            const shown = await get(path, token);
            assert.match(shown.text, /step 1\nSECRET-OF-K/, path);
            assert.match(
              shown.text,
              new RegExp(
                'streamed from box-1 through the database ' +
                  `\\(its last lines; the whole log is job-${job.id}-attempt-1\\.log on box-1&#39;s disk\\)`,
              ),
              path,
            );
          }
        }

        // Over the API: the last line; then a follower from there to the run's end.
        await stream(19, 'step 2\n');
        const tail = await remoteLog(server, viewer, String(job.id), '--tail', '1');
        assert.deepEqual([tail.code, tail.stdout, tail.stderr], [0, 'step 2\n', '']);
        const refusedTail = await remoteLog(server, stranger, String(job.id), '--tail', '1');
        assert.equal(refusedTail.code, 6, refusedTail.stderr);
        // The run goes on once the follower has printed its tail (on a loaded machine a follower
        // started late would read step 3 in its tail, not from the stream).
        let tailed = (): void => undefined;
        const printed = new Promise<void>((resolve) => (tailed = resolve));
        const follower = remoteLogSeen(
          server,
          own,
          (out) => (out.includes('step 2\n') ? tailed() : undefined),
          String(job.id),
          '--tail',
          '2',
          '--follow',
        );
        await Promise.race([printed, follower]); // a follower that ended early fails below
        await stream(26, 'step 3\n', true);
        await store.jobs.finish({ ...guard, status: 'done' });
        const followed = await follower;
        assert.equal(followed.code, 0, followed.stderr);
        assert.equal(followed.stdout, 'SECRET-OF-K\nstep 2\nstep 3\n');
      } finally {
        await server.close();
      }
    });
  });
}
