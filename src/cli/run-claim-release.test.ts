/**
 * `baton release --outcome done` from inside a run (BATON_SESSION, BATON_KEY and BATON_EPOCH set,
 * as `baton up` sets them for its agents) releases nothing: the runner finishes the job, and so the
 * task, by the agent's exit (decision 0051). Real databases, the real command, with --db and over
 * HTTP; outside a run, or for any other outcome, the claim is released as always.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { batonBare, cliOn, servedApi, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

after(stopServers);

for (const db of bothEngines())
  for (const mode of ['db', 'api'] as const) {
    describe(`${db.name}: release done of the run's own claim, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('inside the run: exit 0, nothing released, the task open; stale: fenced; failed: released', async () => {
        const file = await db.fresh();
        const t = cliOn(file);
        await t.json(0, 'task', 'add', 'k', '--title', 'fix the login race');
        const s = await t.session();
        const claim = await t.json(0, 'claim', 'k', '--session', s);
        const epoch = String(claim['epoch']);
        const reach = mode === 'db' ? { BATON_DB: file } : await servedApi(file);
        const env = {
          ...('url' in reach ? { BATON_URL: reach.url, BATON_TOKEN: reach.token } : reach),
          BATON_SESSION: s,
          BATON_KEY: 'k',
          BATON_EPOCH: epoch,
        };
        const release = (...extra: string[]) =>
          batonBare(env, 'release', 'k', '--session', s, '--epoch', epoch, ...extra);

        const done = await release('--outcome', 'done');
        assert.equal(done.code, 0, done.stderr);
        assert.match(done.stdout, /^nothing released: baton up's runner holds k for this run .* exit now$/m);
        const padded = await batonBare(
          env,
          'release',
          'k',
          '--session',
          `0${s}`,
          '--epoch',
          `0${epoch}`,
          '--outcome',
          'done',
        );
        assert.equal(padded.code, 0, padded.stderr);
        assert.match(padded.stdout, /^nothing released/m, 'the same claim written 01 is the same claim');
        const asJson = JSON.parse((await release('--outcome', 'done', '--json')).stdout) as Record<
          string,
          unknown
        >;
        assert.deepEqual([asJson['released'], asJson['outcome']], [false, 'done']);
        assert.equal((await t.json(0, 'task', 'show', 'k'))['state'], 'open');
        assert.equal(
          (await t.json(0, 'heartbeat', s, '--key', 'k', '--epoch', epoch))['ok'],
          true,
          'still held',
        );

        const stale = await batonBare(
          { ...env, BATON_EPOCH: '7' },
          'release',
          'k',
          '--session',
          s,
          '--epoch',
          '7',
          '--outcome',
          'done',
        );
        assert.equal(stale.code, 3, 'an epoch not current is refused, as any release');
        assert.match(
          stale.stderr,
          /^baton: epoch 7 was never granted for k: you hold k at epoch \d+ \(session \d+/,
        );

        const failed = await release('--outcome', 'failed');
        assert.equal(failed.code, 0, failed.stderr);
        assert.match(failed.stdout, /^released k epoch \d+ \(failed\)$/m);
        assert.equal((await t.json(0, 'task', 'show', 'k'))['claim'], null);
      });
    });
  }
