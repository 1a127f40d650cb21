/**
 * A whole number in a query is written as a path id is: digits alone. `?limit=05`, `+5`, `5.0`,
 * `1e1`, ` 5` and `-1` were read as 5 (or 10), or refused only past the schema with words that
 * did not say the form; each is now 400 naming the parameter and the form it takes, on every read
 * of the API that takes one, the session report's epoch ms and the dashboard's pages (their
 * queries and a job's id in the path). The digits themselves are taken; `baton audit --limit 05`
 * and `baton queue list --limit 05` over the API still run, as on the database (the CLI sends the
 * number). A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { repoRoot } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

const ODD = ['05', '+5', '5.0', '1e1', ' 5', '-1', '0x5'];
const WORDS = 'must be a whole number in digits, without a sign, spaces or leading zeros';

/** Each read and its whole-number parameter; `rest` the other parameters the route requires. */
const READS: readonly [path: string, param: string, rest?: string][] = [
  ['/v1/tasks', 'limit'],
  ['/v1/jobs', 'limit'],
  ['/v1/jobs', 'before'],
  ['/v1/audit', 'limit'],
  ['/v1/audit', 'after'],
  ['/v1/audit', 'session'],
  ['/v1/audit', 'job'],
  ['/v1/audit/follow', 'after'],
  ['/v1/audit/follow', 'session'],
  ['/v1/escalations', 'limit'],
  ['/v1/tasks/k/effects', 'after'],
  ['/v1/tasks/k/effects', 'limit'],
  ['/v1/jobs/1/log', 'attempt'],
  ['/v1/jobs/1/log', 'offset'],
  ['/v1/claims/k/guard', 'session', 'epoch=1'],
  ['/v1/claims/k/guard', 'epoch', 'session=1'],
];

/** `baton <args>` over the API: its exit code and what it printed on stderr. */
function overApi(url: string, token: string, args: readonly string[]) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), ...args], {
      env: { ...process.env, BATON_URL: url, BATON_TOKEN: token, BATON_DB: '' },
    });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

for (const db of bothEngines()) {
  describe(`a query's whole numbers are digits alone (${db.name})`, () => {
    test('400 naming the parameter and the form on the API and the dashboard; digits taken', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'digits' });
        await store.tasks.add({ key: 'k' });
        const get = (path: string) => call(server.url, 'GET', path, { token: secret });
        for (const [path, param, rest] of READS) {
          const prefix = `${path}?${rest === undefined ? '' : `${rest}&`}${param}=`;
          for (const odd of ODD) {
            const answer = await get(`${prefix}${encodeURIComponent(odd)}`);
            assert.equal(answer.status, 400, `${path} ${param}=${odd}: ${JSON.stringify(answer.body)}`);
            const error = answer.body['error'] as { message: string };
            assert.equal(error.message, `${param}: ${WORDS}, got ${JSON.stringify(odd)}`, `${path} ${param}`);
          }
          const taken = await get(`${prefix}5`);
          assert.notEqual(taken.status, 400, `${path} ${param}=5: ${JSON.stringify(taken.body)}`);
        }
        const since = await get('/v1/report/sessions?since=05');
        assert.equal(since.status, 400);
        assert.match(
          (since.body['error'] as { message: string }).message,
          /^since must be epoch ms or an ISO time/,
        );
        assert.equal((await get('/v1/report/sessions?since=0')).status, 200);

        const page = async (path: string) => {
          const answer = await fetch(`${server.url}${path}`, {
            headers: { authorization: `Bearer ${secret}` },
          });
          return { status: answer.status, text: await answer.text() };
        };
        for (const [path, param] of [
          ['/', 'limit'],
          ['/', 'before'],
          ['/audit', 'session'],
          ['/audit', 'job'],
          ['/ui/frag/audit', 'limit'],
        ] as const) {
          const odd = await page(`${path}?${param}=05`);
          assert.equal(odd.status, 400, `${path}?${param}=05`);
          assert.match(
            odd.text,
            new RegExp(`${param} ${WORDS}, got &quot;05&quot;|${param} ${WORDS}, got "05"`),
          );
          assert.equal((await page(`${path}?${param}=5`)).status, 200, `${path}?${param}=5`);
          assert.equal(
            (await page(`${path}?${param}=`)).status,
            200,
            `${path}?${param}= (a blank form field)`,
          );
        }
        for (const path of ['/jobs/05', '/ui/frag/job/05', '/ui/frag/output/05']) {
          const odd = await page(path);
          assert.equal(odd.status, 400, path);
          assert.match(odd.text, /job id must be a whole number in digits/, path);
        }
        assert.equal((await page('/jobs/5')).status, 404, 'a job id in digits is read (no job 5)');

        for (const args of [
          ['audit', '--limit', '05'],
          ['queue', 'list', '--limit', '05'],
          ['escalations', '--limit', '05'],
        ]) {
          const ran = await overApi(server.url, secret, args);
          assert.equal(ran.code, 0, `${args.join(' ')}: ${ran.stderr}`);
        }
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
