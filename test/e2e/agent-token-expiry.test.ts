/**
 * An agent token dies with its run, not only with its session (issue 17): `baton up` serving
 * HTTP starts a real agent and is then SIGKILLed, so the runner never revokes the agent's token.
 * While the run lives the token opens the API (here a separate `baton serve` on the same
 * database). Once the dead run's session has been silent past its TTL the token answers 401 on
 * reads and writes, though nobody has yet declared that session ended: the token was minted for
 * that job attempt and claim (token-store.ts TokenRun), which the store judges on its own clock.
 * After a restarted `baton up` takes the host over and rescues the job, the token still opens
 * nothing, and it was never revoked.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { call, serve, type Answer } from '../http/support.js';
import { clusterFixture } from './cluster-support.js';

function agentEnv(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

for (const db of bothEngines()) {
  describe(`agent tokens outlive no run (${db.name})`, () => {
    test('an agent token stops working once its run is over, though the runner died by SIGKILL without revoking it and its session was not yet ended', async () => {
      const c = await clusterFixture(db);
      const api = await serve(c.url);
      try {
        await c.store.jobs.enqueue({ key: 'k', command: 'env > env.txt; exec sleep 60' });
        const first = c.up('solo', '--http', '127.0.0.1:0');
        const envFile = join(c.dir, 'env.txt');
        await waitUntil(
          () => existsSync(envFile) && /BATON_TOKEN=/.test(readFileSync(envFile, 'utf8')),
          20_000,
          first.log(),
        );
        const env = agentEnv(envFile);
        const token = env['BATON_TOKEN'] ?? '';
        const session = Number(env['BATON_SESSION']);
        const epoch = Number(env['BATON_EPOCH']);
        assert.match(token, /^baton_/);
        const [job] = await c.store.jobs.list({ key: 'k' });
        assert.ok(job !== undefined);
        const requests = (): Promise<Answer[]> =>
          Promise.all([
            call(api.url, 'GET', '/v1/tasks/k', { token }),
            call(api.url, 'POST', '/v1/claims/k/heartbeat', { token, body: { session, epoch } }),
            call(api.url, 'POST', '/v1/effects', {
              token,
              body: { key: 'k', session, epoch, kind: 'note', payload: { n: 1 } },
            }),
          ]);
        const during = await requests();
        assert.deepEqual(
          during.map((a) => a.status),
          [200, 200, 200],
          JSON.stringify(during.map((a) => a.body)),
        );

        first.signal('SIGKILL');
        await first.exited();
        // Within the agent session's TTL (--stale-after 2) and the API's 2 s memory of tokens.
        await waitUntil(
          async () => (await call(api.url, 'GET', '/v1/tasks/k', { token })).status === 401,
          20_000,
          'the token to stop working',
        );
        assert.equal(
          (await c.store.sessions.get(session))?.state,
          'live',
          'nobody has ended the session yet',
        );
        const effectsBefore = (await c.store.effects.list({ key: 'k' })).length;
        const dead = await requests();
        assert.deepEqual(
          dead.map((a) => a.status),
          [401, 401, 401],
        );
        assert.match(
          JSON.stringify(dead[0]?.body),
          /the token's session or run has ended \(ended, or rescued as stale/,
        );
        assert.match(
          JSON.stringify(dead[0]?.body),
          /a run's token dies with its run.*baton session start --ttl/,
        );

        const second = c.up('solo');
        await second.waitForLog(/took over host solo from session \d+/, 30_000);
        await waitUntil(
          async () => {
            const now = await c.store.jobs.get(job.id);
            return now !== null && (now.epoch !== job.epoch || !['claimed', 'running'].includes(now.status));
          },
          30_000,
          'the dead attempt to be rescued',
        );
        const after = await requests();
        assert.deepEqual(
          after.map((a) => a.status),
          [401, 401, 401],
        );
        assert.equal(
          (await c.store.effects.list({ key: 'k' })).length,
          effectsBefore,
          'no write went through',
        );
        assert.deepEqual(await c.store.tokens.verify(token), { ok: false, reason: 'ended' });
        const made = (await c.store.tokens.list({ all: true })).find((t) => t.session === session);
        assert.equal(made?.revokedAt, null, 'nobody revoked it: the end of its run is what closed it');
      } finally {
        await api.stop();
        await c.close();
      }
    });
  });
}
