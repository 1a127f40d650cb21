/**
 * `baton job log --follow` on a run whose `baton up` is SIGKILLed (decision 0034's amendment): it
 * used to wait for lines that never came and say nothing. It now says once on stderr that the
 * runner's host is silent and its job awaits rescue, follows on, and ends (exit 0) once a `baton
 * up` started again on the host takes the job back, saying what became of the job.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { startTestServer } from '../dashboard/server.js';
import { agentStarted, clusterFixture, ROOT } from './cluster-support.js';

interface Follower {
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly code: Promise<number | null>;
}

/** `baton job log <id> --follow` with `target` (`--db <url>`, or none with BATON_URL in `env`). */
function follow(
  target: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd: string,
  id: number,
): Follower {
  const args = [join(ROOT, 'bin', 'baton.js'), ...target, 'job', 'log', String(id), '--follow'];
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env } });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000); // a follower that never ends fails
  const code = new Promise<number | null>((resolve) =>
    child.on('close', (exit) => {
      clearTimeout(timer);
      resolve(exit);
    }),
  );
  return { stdout: () => stdout, stderr: () => stderr, code };
}

for (const db of bothEngines()) {
  describe(`baton job log --follow when the runner dies (${db.name})`, () => {
    test('says once that the runner is silent and its job awaits rescue, then ends with the run', async () => {
      const c = await clusterFixture(db);
      // The API `baton serve` runs, on the same database: a follower over BATON_URL.
      const server = await startTestServer(c.url);
      try {
        const { job } = await c.store.jobs.enqueue({ key: 'k', command: 'echo started; exec sleep 60' });
        const first = c.up('solo');
        await waitUntil(async () => agentStarted(c.store, 'k'), 20_000, 'the agent to start');
        const api = { BATON_URL: server.url, BATON_TOKEN: server.operatorToken };
        const followers = [follow(['--db', c.url], {}, c.dir, job.id), follow([], api, c.dir, job.id)];
        for (const follower of followers)
          await waitUntil(
            () => follower.stdout() === 'started\n',
            10_000,
            'a follower to print the first line',
          );
        first.signal('SIGKILL');
        await first.exited();
        // The runner's TTL is its --stale-after, 2 s here; nobody is left to rescue its session.
        const silent = new RegExp(
          `^baton: the runner of job ${job.id} on host solo has been silent for [\\d.]+ s \\(its \`baton up\` ` +
            'is dead or paused\\); its job awaits rescue by a leading `baton up` \\(or start `baton up --host solo` ' +
            'on that machine again\\): following on until the run ends$',
          'm',
        );
        for (const follower of followers)
          await waitUntil(
            () => silent.test(follower.stderr()),
            20_000,
            `the silence said: ${follower.stderr()}`,
          );
        assert.equal((await c.store.jobs.get(job.id))?.status, 'running', 'said while the job awaits rescue');

        const second = c.up('solo');
        for (const follower of followers) {
          const code = await follower.code;
          assert.equal(code, 0, `${follower.stderr()}\n${second.log()}`);
          assert.equal(follower.stdout(), 'started\n');
          const lines = follower.stderr().trimEnd().split('\n');
          assert.equal(lines.length, 2, follower.stderr());
          assert.match(lines[0] ?? '', silent, 'said once');
          assert.match(
            lines[1] ?? '',
            new RegExp(
              `^baton: job ${job.id} attempt 1 ended without its runner: (queued \\(requeued: runner session \\d+ ` +
                `\\(agent \\d+\\) is no longer live\\); \`baton job log ${job.id} --follow\` follows its next run|` +
                // Rare: placed again between the read that saw the run end and the look at the job.
                'claimed|running)',
            ),
          );
        }
      } finally {
        await server.close();
        await c.close();
      }
    });
  });
}
