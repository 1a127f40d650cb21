/**
 * An agent run by `baton up --http` holds a token minted for its run: one job attempt on one task.
 * Its session is its own, so a check on the session alone let that token claim any free task,
 * release it as done (closing work nobody did and cancelling its queued job), take more with
 * `next`, and record effects or escalate there. Here a real run's token tries each against a real
 * `baton up`: every one is 403 with an `auth:refused` row, the other tasks stay open and free, and
 * the run's own task still answers its token.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { envOf } from '../support/run-token.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, clusterFixture } from './cluster-support.js';

for (const db of bothEngines()) {
  describe(`a run's token reaches its own task only (${db.name})`, () => {
    test('it cannot claim, take, release, mark or escalate another task', async () => {
      const c = await clusterFixture(db);
      try {
        const agent = 'env > env.txt && while [ ! -e go ]; do sleep 0.1; done';
        assert.equal((await c.baton('enqueue', 'k', '--command', agent, '--ram-mb', '300')).code, 0);
        for (const key of ['free', 'spare']) assert.equal((await c.baton('task', 'add', key)).code, 0);
        const up = c.up('h1', ...STEADY, '--http', '127.0.0.1:0');
        await up.waitForLog(/serving the API and dashboard on http:\/\/127\.0\.0\.1:\d+/);
        const envFile = join(c.dir, 'env.txt');
        await waitUntil(
          () => existsSync(envFile) && readFileSync(envFile, 'utf8').includes('BATON_TOKEN='),
          20_000,
          up.log(),
        );
        const env = envOf(readFileSync(envFile, 'utf8'));
        const [url, token] = [env['BATON_URL'] ?? '', env['BATON_TOKEN'] ?? ''];
        const session = Number(env['BATON_SESSION']);
        const epoch = Number(env['BATON_EPOCH']);
        // The job's RAM budget reaches the agent, so it can size its own work to it.
        assert.equal(env['BATON_RAM_MB'], '300');
        const post = async (path: string, body: unknown) => {
          const response = await fetch(`${url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { status: response.status, text: await response.text() };
        };
        const attempts: [string, unknown][] = [
          ['/v1/claims/free', { session }],
          ['/v1/next', { session }],
          ['/v1/claims/free/release', { session, epoch: 1, outcome: 'done' }],
          ['/v1/claims/free/heartbeat', { session, epoch: 1 }],
          ['/v1/effects', { key: 'free', session, epoch: 1, kind: 'pr' }],
          ['/v1/tasks/free/escalate', { reason: 'mine', session, epoch: 1 }],
        ];
        for (const [path, body] of attempts) {
          const answer = await post(path, body);
          assert.equal(answer.status, 403, `${path}: ${answer.text}`);
          // The fix keeps the agent on its task, never sends it looking for a wider token.
          assert.match(answer.text, /work on k alone: finish it, or escalate it/, path);
          assert.doesNotMatch(answer.text, /ask an operator for a token/, path);
        }
        for (const key of ['free', 'spare']) {
          const task = await c.store.tasks.get(key);
          assert.equal(task?.state, 'open', `${key} is still open`);
          assert.equal(await c.store.claims.current(key), null, `${key} is still free`);
        }
        const refused = await c.store.audit.list({ type: 'auth:refused' });
        assert.equal(refused.length, attempts.length, 'one auth:refused row per attempt');
        // Its own task still answers it.
        assert.equal((await post('/v1/claims/k/heartbeat', { session, epoch })).status, 200);
        assert.equal((await post('/v1/claims/k', { session })).status, 200);
        const effect = await post('/v1/effects', { key: 'k', session, epoch, kind: 'note' });
        assert.equal(effect.status, 200, effect.text);
        assert.equal((await post(`/v1/sessions/${session}/heartbeat`, {})).status, 200);

        writeFileSync(join(c.dir, 'go'), '');
        await waitUntil(
          async () => (await c.store.jobs.list({ key: 'k' }))[0]?.status === 'done',
          20_000,
          up.log(),
        );
      } finally {
        await c.close();
      }
    });
  });
}
