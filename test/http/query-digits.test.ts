/**
 * A whole number in a query is written as a path id is: plain digits (decision 0055). `?limit=05`,
 * `+5`, ` 5`, `5.0`, `1e1`, `-1` and `0x5` were read as 5 (or 10), or refused past the schema in
 * words that differed from one parameter to the next; each is now 400 `invalid_input` in one line
 * naming the parameter, its range, the form and what was given, the same words on every read of the
 * API that takes one; out of range too. The report's `since` and `until` (epoch ms or an ISO time)
 * take the same digits. The digits themselves are taken; `baton audit`, `queue list` and
 * `escalations --limit 05` over the API still run, as on the database (the CLI sends the number it
 * checked). A real `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { LIST_LIMIT_MAX } from '../../src/coordinator/inputs.js';
import { openStore } from '../../src/store/open.js';
import { repoRoot } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { call, serve, wholeNumberWords } from './support.js';

const ODD = ['05', '+5', '5.0', '1e1', ' 5', '5 ', '-1', '0x5', '', 'five', '99999999999999999999'];
const MANY = Number.MAX_SAFE_INTEGER;

/** Each read, its whole-number parameter and range; `rest` the other parameters the route requires. */
const READS: readonly [path: string, param: string, min: number, max: number, rest?: string][] = [
  ['/v1/tasks', 'limit', 1, LIST_LIMIT_MAX],
  ['/v1/jobs', 'limit', 1, LIST_LIMIT_MAX],
  ['/v1/jobs', 'before', 1, MANY],
  ['/v1/audit', 'limit', 1, LIST_LIMIT_MAX],
  ['/v1/audit', 'after', 0, MANY],
  ['/v1/audit', 'session', 1, MANY],
  ['/v1/audit', 'job', 1, MANY],
  ['/v1/audit/follow', 'after', 0, MANY],
  ['/v1/audit/follow', 'session', 1, MANY],
  ['/v1/audit/follow', 'job', 1, MANY],
  ['/v1/escalations', 'limit', 1, LIST_LIMIT_MAX],
  ['/v1/tasks/k/effects', 'after', 0, MANY],
  ['/v1/tasks/k/effects', 'limit', 1, LIST_LIMIT_MAX],
  ['/v1/jobs/1/log', 'attempt', 1, MANY],
  ['/v1/jobs/1/log', 'offset', 0, MANY],
  ['/v1/claims/k/guard', 'session', 1, MANY, 'epoch=1'],
  ['/v1/claims/k/guard', 'epoch', 1, MANY, 'session=1'],
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

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly schema?: { readonly type?: string; readonly minimum?: number; readonly maximum?: number };
}

for (const db of bothEngines()) {
  describe(`a query's whole numbers are plain digits (${db.name})`, () => {
    test('400 in one line naming the parameter, its range, the form and what was given; digits taken', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'digits' });
        await store.tasks.add({ key: 'k' });
        await store.jobs.enqueue({ key: 'k' });
        const get = (path: string) => call(server.url, 'GET', path, { token: secret });
        const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
          paths: Record<string, { get?: { parameters?: Parameter[] } }>;
        };
        for (const [path, param, min, max, rest] of READS) {
          const prefix = `${path}?${rest === undefined ? '' : `${rest}&`}${param}=`;
          const outside = [String(min - 1), String(max + 1)].filter((value) => !value.startsWith('-'));
          for (const odd of [...ODD, ...outside]) {
            const answer = await get(`${prefix}${encodeURIComponent(odd)}`);
            assert.equal(answer.status, 400, `${path} ${param}=${odd}: ${JSON.stringify(answer.body)}`);
            const error = answer.body['error'] as { code: string; message: string };
            assert.equal(error.code, 'invalid_input');
            assert.equal(error.message, wholeNumberWords(param, min, max, odd), `${path} ${param}`);
          }
          for (const taken of [String(min), '5']) {
            const answer = await get(`${prefix}${taken}`);
            assert.notEqual(answer.status, 400, `${path} ${param}=${taken}: ${JSON.stringify(answer.body)}`);
          }
          const route = path.replace('/k/', '/{key}/').replace('/1/', '/{id}/');
          const documented = doc.paths[route]?.get?.parameters?.find(
            (p) => p.in === 'query' && p.name === param,
          );
          assert.deepEqual(
            [documented?.schema?.type, documented?.schema?.minimum, documented?.schema?.maximum],
            ['integer', min, max],
            `${route} ${param} in /openapi.json`,
          );
        }

        const instantWords = (name: string, got: string) =>
          `${name}: must be epoch ms, a whole number from 0 to 8640000000000000 in plain digits ` +
          '(no sign, spaces, decimals, exponent or leading zeros), or an ISO time no later than the year ' +
          `275760, got ${JSON.stringify(got)}`;
        for (const name of ['since', 'until']) {
          for (const odd of ['05', '+5', ' 5', '-5', '5.0', '1e3', 'Dec 7 2026', '8640000000000001']) {
            const answer = await get(`/v1/report/sessions?${name}=${encodeURIComponent(odd)}`);
            assert.equal(answer.status, 400, `${name}=${odd}: ${JSON.stringify(answer.body)}`);
            const error = answer.body['error'] as { message: string };
            assert.equal(error.message, instantWords(name, odd));
          }
          for (const taken of ['0', '1796601600000', '2026-12-07', '2026-12-07T10:00:00Z']) {
            const answer = await get(`/v1/report/sessions?${name}=${encodeURIComponent(taken)}`);
            assert.equal(answer.status, 200, `${name}=${taken}: ${JSON.stringify(answer.body)}`);
          }
        }

        for (const args of [
          ['audit', '--limit', '05'],
          ['queue', 'list', '--limit', '05', '--before', '0099'],
          ['escalations', '--limit', '05'],
          ['task', 'list', '--limit', '05'],
        ]) {
          const ran = await overApi(server.url, secret, args);
          assert.equal(ran.code, 0, `baton ${args.join(' ')} over the API: ${ran.stderr}`);
        }
      } finally {
        await server.stop();
        await store.close();
      }
    });
  });
}
