/**
 * An agent run by `baton up --http` calls Baton without repeating what its runner told it
 * (decision 0051, session 21): `baton effect --kind pr` and `baton heartbeat` with no session, key
 * or epoch take the run's BATON_SESSION, BATON_KEY and BATON_EPOCH. And its run's token releasing
 * the run's own claim `done` over raw HTTP (node's fetch, as curl would) releases nothing: the job
 * ends `done` when the agent exits 0, not `cancelled` ("task done by session N").
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { batonBare } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { envOf } from '../support/run-token.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, clusterFixture } from './cluster-support.js';

/** A key beyond ASCII: the run's own claim is the same key in NFD, as `authorize` reads it. */
const KEY = 'th\u00e9';
const NFD = encodeURIComponent('the\u0301');

const AGENT = [
  `baton effect --kind pr --payload '{"url": "https://example.com/pr/7"}' > effect.out 2>&1; echo $? > effect.rc`,
  'baton heartbeat > beat.out 2>&1; echo $? > beat.rc',
  'env > env.txt',
  'while [ ! -e go ]; do sleep 0.1; done',
].join('; ');

for (const db of bothEngines()) {
  describe(`an agent's flags from its run, and its release done over HTTP (${db.name})`, () => {
    test('no flags inside the run; a raw release done keeps the claim and the job ends done', async () => {
      const c = await clusterFixture(db);
      try {
        assert.equal((await c.baton('enqueue', KEY, '--command', AGENT)).code, 0);
        const up = c.up('h1', ...STEADY, '--http', '127.0.0.1:0');
        const envFile = join(c.dir, 'env.txt');
        await waitUntil(
          () => existsSync(envFile) && readFileSync(envFile, 'utf8').includes('BATON_TOKEN='),
          20_000,
          up.log(),
        );
        const read = (name: string) => readFileSync(join(c.dir, name), 'utf8').trim();
        const env = envOf(read('env.txt'));
        const [url, token] = [env['BATON_URL'] ?? '', env['BATON_TOKEN'] ?? ''];
        const session = Number(env['BATON_SESSION']);
        const epoch = Number(env['BATON_EPOCH']);

        // The agent's own calls, with no flags.
        assert.equal(read('effect.rc'), '0', read('effect.out'));
        assert.match(
          read('effect.out'),
          new RegExp(`^recorded effect \\d+ on ${KEY} \\(pr, epoch ${epoch}\\)$`),
        );
        const effects = await c.store.effects.list({ key: KEY });
        assert.deepEqual(
          effects.map((e) => [e.kind, e.session, e.epoch, e.payload]),
          [['pr', session, epoch, { url: 'https://example.com/pr/7' }]],
        );
        assert.equal(read('beat.rc'), '0', read('beat.out'));
        assert.equal(read('beat.out'), `session ${session} is alive and holds ${KEY} at epoch ${epoch}`);

        const post = async (path: string, body: unknown) => {
          const response = await fetch(`${url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { status: response.status, body: (await response.json()) as Record<string, unknown> };
        };
        const done = await post(`/v1/claims/${encodeURIComponent(KEY)}/release`, {
          session,
          epoch,
          outcome: 'done',
        });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.deepEqual(
          { ...done.body, message: undefined },
          { key: KEY, session, epoch, outcome: 'done', released: false, message: undefined },
        );
        assert.match(
          String(done.body['message']),
          new RegExp(`^nothing released: baton up's runner holds ${KEY} .* exit now$`),
        );
        // The same key spelt in NFD is the same claim: still nothing released (a review's finding).
        const nfd = await post(`/v1/claims/${NFD}/release`, { session, epoch, outcome: 'done' });
        assert.equal(nfd.status, 200, JSON.stringify(nfd.body));
        assert.equal(nfd.body['released'], false, JSON.stringify(nfd.body));
        const stale = await post(`/v1/claims/${encodeURIComponent(KEY)}/release`, {
          session,
          epoch: epoch + 1,
          outcome: 'done',
        });
        assert.equal(stale.status, 409, 'an epoch not current is fenced, as any release');
        assert.equal((stale.body['error'] as Record<string, unknown>)['code'], 'fenced');

        // The CLI over HTTP with the run's token but no BATON_KEY (so its own check cannot see the
        // run): the server's answer says nothing was released, and the CLI says so.
        const cli = await batonBare(
          { BATON_URL: url, BATON_TOKEN: token, BATON_SESSION: String(session) },
          'release',
          KEY,
          '--epoch',
          String(epoch),
          '--outcome',
          'done',
          '--json',
        );
        assert.equal(cli.code, 0, cli.stderr);
        assert.deepEqual(JSON.parse(cli.stdout), {
          key: KEY,
          session,
          epoch,
          outcome: 'done',
          released: false,
        });

        assert.equal((await c.store.claims.current(KEY))?.epoch, epoch, 'the run still holds its claim');
        assert.equal((await c.store.tasks.get(KEY))?.state, 'open');
        writeFileSync(join(c.dir, 'go'), '');
        await waitUntil(
          async () => (await c.store.jobs.list({ key: KEY }))[0]?.status === 'done',
          20_000,
          up.log(),
        );
        const [job] = await c.store.jobs.list({ key: KEY });
        assert.equal(job?.status, 'done', `not cancelled: ${String(job?.reason)}`);
        assert.equal((await c.store.tasks.get(KEY))?.state, 'done');
      } finally {
        await c.close();
      }
    });
  });
}
