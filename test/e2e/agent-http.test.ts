/**
 * Agents without database credentials, end to end (issue 17, item 4): a real `baton up --http`
 * runs a real agent that uses the `baton` CLI itself with only BATON_URL and BATON_TOKEN. While it
 * runs, its token opens its own claim and no other session's (403); once the run ends, the token
 * opens nothing (401).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { clusterFixture, ROOT, STEADY } from './cluster-support.js';

const BIN = join(ROOT, 'bin', 'baton.js');

for (const db of bothEngines()) {
  describe(`agents over HTTP (${db.name})`, () => {
    test('an agent holds no database URL, works through its token, and the token dies with the run', async () => {
      const c = await clusterFixture(db);
      try {
        const baton = `'${process.execPath}' '${BIN}'`;
        const agent = [
          'env > env.txt',
          `${baton} heartbeat "$BATON_SESSION" --key "$BATON_KEY" --epoch "$BATON_EPOCH" --json > hb.json`,
          `${baton} effect "$BATON_KEY" --session "$BATON_SESSION" --epoch "$BATON_EPOCH" --kind note --json > effect.json`,
          `${baton} task show "$BATON_KEY" --json > show.json`,
          'while [ ! -e go ]; do sleep 0.1; done',
        ].join(' && ');
        assert.equal((await c.baton('enqueue', 'k', '--command', agent)).code, 0);
        assert.equal((await c.baton('task', 'add', 'other')).code, 0);
        const human = (await c.baton('session', 'start', '--kind', 'human', '--ttl', '1h')).stdout.trim();
        assert.equal((await c.baton('claim', 'other', '--session', human)).code, 0);
        const up = c.up('h1', ...STEADY, '--http', '127.0.0.1:0');
        await up.waitForLog(/serving the API and dashboard on http:\/\/127\.0\.0\.1:\d+/);
        const url = /serving the API and dashboard on (http:\/\/127\.0\.0\.1:\d+)/.exec(up.log())?.[1] ?? '';
        const show = join(c.dir, 'show.json');
        await waitUntil(() => existsSync(show) && readFileSync(show, 'utf8').length > 0, 20_000, up.log());

        const env = Object.fromEntries(
          readFileSync(join(c.dir, 'env.txt'), 'utf8')
            .split('\n')
            .filter((l) => l.includes('='))
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        );
        assert.equal(env['BATON_URL'], url);
        for (const [name, value] of Object.entries(env)) {
          assert.ok(!/^(BATON_DB|DATABASE_URL|PG.*)$/.test(name), `${name} reached the agent`);
          assert.ok(!value.includes(c.url) && !/postgres(ql)?:\/\/|sqlite:/i.test(value), `${name}=${value}`);
        }
        const hb = JSON.parse(readFileSync(join(c.dir, 'hb.json'), 'utf8')) as Record<string, unknown>;
        assert.deepEqual([hb['ok'], hb['key']], [true, 'k']);
        const effect = JSON.parse(readFileSync(join(c.dir, 'effect.json'), 'utf8')) as Record<
          string,
          unknown
        >;
        assert.equal(effect['kind'], 'note');
        assert.equal((JSON.parse(readFileSync(show, 'utf8')) as { state: string }).state, 'open');

        const token = env['BATON_TOKEN'] ?? '';
        const epoch = Number(env['BATON_EPOCH']);
        const session = Number(env['BATON_SESSION']);
        const post = (path: string, body: unknown) =>
          fetch(`${url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        assert.equal((await post('/v1/claims/k/heartbeat', { session, epoch })).status, 200);
        const foreign = await post('/v1/claims/other/release', { session: Number(human), epoch: 1 });
        assert.equal(foreign.status, 403, 'another session is out of reach');
        assert.equal((await c.store.claims.current('other'))?.session, Number(human));

        writeFileSync(join(c.dir, 'go'), '');
        await waitUntil(
          async () => (await c.store.jobs.list({ key: 'k' }))[0]?.status === 'done',
          20_000,
          'done',
        );
        await waitUntil(
          async () => (await post('/v1/claims/k/heartbeat', { session, epoch })).status === 401,
          5_000,
          'the token to stop working',
        );
        const after = (await (await post('/v1/claims/k/heartbeat', { session, epoch })).json()) as {
          error: { code: string };
        };
        assert.equal(after.error.code, 'unauthorized');
      } finally {
        await c.close();
      }
    });
  });
}
