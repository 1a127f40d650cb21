/**
 * Agents without database credentials (issue 17, item 4): when `baton up` serves the HTTP API,
 * the runner gives each agent BATON_URL and a token of scope `agent` bound to the agent's own
 * session, and no way into the database; the token is revoked when the run ends. The runner
 * here runs in this process (runUp), the agent is a real process that writes its environment to
 * a file; the token is checked through the store while it runs and after.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/daemon/clock.js';
import { runUp, UP_DEFAULTS } from '../../src/daemon/up.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';

const API = 'http://127.0.0.1:7070';

for (const db of bothEngines()) {
  describe(`agent credentials (${db.name})`, () => {
    test('an agent sees no database URL or path, holds a live agent token for its session, revoked when it ends', async () => {
      const url = await db.fresh();
      const dir = mkdtempSync(join(tmpdir(), 'baton-cred-'));
      const store = await openStore(url);
      const stop = new AbortController();
      const envFile = join(dir, 'env.json');
      const go = join(dir, 'go');
      const agent = `node -e 'require("fs").writeFileSync(process.argv[1], JSON.stringify(process.env))' ${envFile}; while [ ! -e ${go} ]; do sleep 0.1; done`;
      const env = { ...process.env };
      process.env['PGPASSWORD'] = 'secret-for-the-runner';
      process.env['BATON_DB'] = url;
      let up: Promise<void> | null = null;
      try {
        await store.jobs.enqueue({ key: 'k', command: agent });
        up = runUp(
          store,
          {
            ...UP_DEFAULTS,
            dbUrl: url,
            host: 'h1',
            leaseTtlMs: 2000,
            retryIntervalMs: 500,
            heartbeatIntervalMs: 500,
            staleAfterMs: 2000,
            slotsMax: 2,
            ramTotalMb: null,
            standby: false,
            agentCommand: null,
            containment: 'process-group',
            agentEnv: ['PGPASSWORD'],
            logDir: join(dir, 'logs'),
            cwd: dir,
            apiUrl: API,
          },
          systemClock,
          () => undefined,
          stop.signal,
        );
        await waitUntil(() => existsSync(envFile) && readFileSync(envFile, 'utf8').length > 0, 20_000, 'env');
        const seen = JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string>;
        assert.equal(seen['BATON_URL'], API);
        const token = seen['BATON_TOKEN'] ?? '';
        assert.match(token, /^baton_/);
        for (const [name, value] of Object.entries(seen)) {
          assert.ok(!/^(BATON_DB|DATABASE_URL|PG.*)$/.test(name), `${name} reached the agent`);
          assert.ok(!value.includes(url) && !/postgres(ql)?:\/\/|sqlite:/i.test(value), `${name}=${value}`);
        }
        const [job] = await store.jobs.list({ key: 'k' });
        const check = await store.tokens.verify(token);
        assert.ok(check.ok, 'the token works during the run');
        assert.equal(check.token.scope, 'agent');
        assert.equal(check.token.session, job?.agentSession);
        assert.equal(String(seen['BATON_SESSION']), String(job?.agentSession));
        writeFileSync(go, '');
        await waitUntil(
          async () => (await store.jobs.list({ key: 'k' }))[0]?.status === 'done',
          20_000,
          'done',
        );
        // The run's end alone already refuses the token, and says so before the revoke does
        // ('ended', decision 0048's review fixes); the runner's revoke follows: wait for it.
        const tokenOfRun = async () =>
          (await store.tokens.list({ all: true })).find((t) => t.session === job?.agentSession);
        await waitUntil(
          async () => (await tokenOfRun())?.revokedAt != null,
          5_000,
          'the runner to revoke the token',
        );
        assert.deepEqual(await store.tokens.verify(token), { ok: false, reason: 'ended' });
      } finally {
        process.env = env;
        stop.abort();
        await up;
        await store.close();
      }
    });
  });
}
