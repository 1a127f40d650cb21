/**
 * Random and malformed requests on every route of /openapi.json, on both engines: random path
 * parameters (long, unicode, broken escapes), bodies (any JSON, the routes' own fields with values
 * of the wrong kind, text that is not JSON), content types and tokens. Every answer is below 500
 * and every refusal carries an error code; a refusal changes nothing (the ledger's newest row is
 * the same: every change writes one), except a 403, which adds exactly its auth:refused row.
 * Thousands of cases go through the application in process; the server process itself is fuzzed
 * in api.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { RefusalCap } from '../../src/coordinator/refusal-cap.js';
import { apiApp, httpApp } from '../../src/http/app.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';

const FIELDS = [
  'key',
  'session',
  'epoch',
  'outcome',
  'reason',
  'scope',
  'host',
  'command',
  'ramMb',
  'timeLimit',
  'priority',
  'kind',
  'gate',
  'done',
  'note',
  'title',
  'labels',
  'pid',
  'ttl',
  'expires',
  'payload',
  'review',
  'size',
  'finish',
  'next',
  'lease',
];

const junkText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.integer().map(String),
  fc.constantFrom(
    '',
    '0',
    '-1',
    '1e400',
    '9007199254740993',
    '%',
    '%zz',
    '%E0%A4%A',
    '..',
    '\u0000',
    // Half of a character: JSON carries it as a \ud800 escape, which PostgreSQL's jsonb refuses.
    '\ud800',
    'a\udfffb',
    'x'.repeat(5000),
  ),
);
const junkValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.integer(),
  fc.double(),
  junkText,
  fc.constantFrom(null, true, -1, 0, 1, 2 ** 53, 'done', 'operator', 'k1', 'design'),
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.constantFrom(...FIELDS), junkValue, { maxKeys: 6 }).map((v) => JSON.stringify(v)),
  junkText,
);

for (const db of bothEngines()) {
  void describe(`fuzzed API requests (${db.name})`, () => {
    test('random and malformed requests on every route get a 4xx with a code or a success, never a 500, and refusals change nothing', async () => {
      const store = await openStore(await db.fresh());
      try {
        // Every 403 writes its row here: the caps on repeated refusals are token-cache.test's.
        const uncapped = { dead: new RefusalCap(Infinity, 0), forbidden: new RefusalCap(Infinity, 0) };
        const baton = new Coordinator(store, uncapped);
        const s = await baton.startSession({ host: 'h1', pid: 1 });
        await baton.addTask({ key: 'k1' });
        await baton.claim({ key: 'k1', session: s.id });
        await baton.enqueue({ key: 'k2' });
        const operator = (await baton.tokens.create({ scope: 'operator' })).secret;
        const agent = (await baton.tokens.create({ scope: 'agent', session: s.id })).secret;
        const app = httpApp({ coordinator: baton, auth: 'reads-open' });
        const doc = apiApp(baton, 'reads-open').getOpenAPI31Document({
          openapi: '3.1.0',
          info: { title: 'Baton', version: '1' },
        });
        const routes = Object.entries(doc.paths ?? {}).flatMap(([path, ops]) =>
          Object.keys(ops as object).map((m) => ({ method: m.toUpperCase(), path })),
        );
        assert.ok(routes.length > 30);
        const request = fc.record({
          route: fc.constantFrom(...routes),
          params: fc.array(
            fc.oneof(
              // encodeURIComponent throws on half of a character; a URL cannot carry one.
              junkText.filter((t) => !/\p{Cs}/u.test(t)).map(encodeURIComponent),
              junkText.filter((t) => !/[/?#]/.test(t)),
              fc.constantFrom('k1', '1', '2'),
            ),
            { minLength: 3, maxLength: 3 },
          ),
          query: fc.dictionary(
            fc.constantFrom(...FIELDS, 'limit', 'status', 'after', 'live', 'job'),
            junkText,
            {
              maxKeys: 3,
            },
          ),
          body,
          type: fc.constantFrom('application/json', 'application/json', 'text/plain', undefined),
          token: fc.constantFrom(operator, operator, agent, 'garbage', undefined),
        });
        let refusals = 0;
        await fc.assert(
          fc.asyncProperty(request, async (r) => {
            let i = 0;
            const path = r.route.path.replace(/\{[^}]+\}/g, () => r.params[i++] ?? 'x');
            const search = new URLSearchParams(r.query).toString();
            const headers: Record<string, string> = {};
            if (r.type !== undefined) headers['content-type'] = r.type;
            if (r.token !== undefined) headers['authorization'] = `Bearer ${r.token}`;
            const before = await store.observe.auditMaxId();
            const init: RequestInit = { method: r.route.method, headers };
            if (r.body !== undefined && r.route.method !== 'GET') init.body = r.body;
            let response: Response;
            try {
              response = await app.request(`http://x${path}${search === '' ? '' : `?${search}`}`, init);
            } catch (error) {
              // A URL the client itself refuses to build is not a request at all.
              if (error instanceof TypeError) return;
              throw error;
            }
            const text = await response.text();
            assert.ok(response.status < 500, `${r.route.method} ${path}: ${response.status} ${text}`);
            if (response.status < 400) return;
            refusals++;
            const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
            assert.equal(typeof parsed.error?.code, 'string', text);
            assert.equal(typeof parsed.error?.message, 'string', text);
            const after = await store.observe.auditMaxId();
            if (response.status === 403) {
              assert.equal(after, before + 1, 'a 403 writes its auth:refused row and nothing else');
              const [row] = await store.audit.list({ afterId: before });
              assert.equal(row?.type, 'auth:refused');
            } else if (!(r.route.path === '/v1/next' && response.status === 404)) {
              // `next` with no eligible task answers 404 after starting and ending a session for the caller.
              assert.equal(
                after,
                before,
                `${r.route.method} ${path} answered ${response.status} and changed the ledger`,
              );
            }
          }),
          { numRuns: Number(process.env['BATON_FUZZ_RUNS'] ?? 2000) },
        );
        assert.ok(refusals > 0);
      } finally {
        await store.close();
      }
    });
  });
}
