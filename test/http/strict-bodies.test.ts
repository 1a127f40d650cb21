/**
 * Request bodies are strict: a field a route does not take (a misspelling such as "priorty") is
 * 400 `invalid_input` naming the field and the route, and nothing is written; it was once dropped
 * while the rest was carried out (a task at the default priority, a job with no RAM budget). The
 * OpenAPI document says so of every object of every body (additionalProperties: false). A real
 * `baton serve` on both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, dumpTables, serve, wholeNumberWords } from './support.js';

type Schema = Record<string, unknown>;
type Document = {
  paths: Record<string, Record<string, Schema>>;
  components: { schemas: Record<string, Schema> };
};

/** Every object schema under `schema` (through $refs, properties and items), with where it is. */
function objects(
  doc: Document,
  schema: unknown,
  where: string,
  seen = new Set<string>(),
): [string, Schema][] {
  if (typeof schema !== 'object' || schema === null) return [];
  const node = schema as Schema;
  const ref = node['$ref'];
  if (typeof ref === 'string') {
    if (seen.has(ref)) return [];
    seen.add(ref);
    const name = ref.replace('#/components/schemas/', '');
    return objects(doc, doc.components.schemas[name], `${where} (${name})`, seen);
  }
  const own: [string, Schema][] = node['type'] === 'object' || 'properties' in node ? [[where, node]] : [];
  const properties = Object.entries((node['properties'] ?? {}) as Record<string, unknown>);
  const nested = [
    ...properties.map(([name, value]) => [`${where}.${name}`, value] as const),
    [`${where}[]`, node['items']] as const,
    ...['anyOf', 'oneOf', 'allOf'].flatMap((k) =>
      ((node[k] ?? []) as unknown[]).map((v) => [where, v] as const),
    ),
  ];
  return [...own, ...nested.flatMap(([at, value]) => objects(doc, value, at, seen))];
}

for (const db of bothEngines()) {
  describe(`strict request bodies (${db.name})`, () => {
    test('the document marks every object of every body additionalProperties: false', async () => {
      const server = await serve(await db.fresh());
      try {
        const doc = (await call(server.url, 'GET', '/openapi.json')).body as unknown as Document;
        let bodies = 0;
        for (const [path, operations] of Object.entries(doc.paths)) {
          for (const [method, operation] of Object.entries(operations)) {
            const body = operation['requestBody'] as
              { content: Record<string, { schema: unknown }> } | undefined;
            if (body === undefined) continue;
            bodies += 1;
            const found = objects(doc, body.content['application/json']?.schema, `${method} ${path}`);
            assert.ok(found.length > 0, `${method} ${path} has an object body`);
            for (const [where, schema] of found) assert.equal(schema['additionalProperties'], false, where);
          }
        }
        assert.ok(bodies >= 25, `the document lists ${bodies} bodies`);
      } finally {
        await server.stop();
      }
    });

    test('a misspelt field is 400 naming it and the route, and nothing is written', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'strict-bodies' });
        const post = (path: string, body: unknown) => call(server.url, 'POST', path, { token: secret, body });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h1', pid: 1 })).id;
        await store.tasks.add({ key: 'held' });
        await store.jobs.enqueue({ key: 'running', command: 'true' });
        const taken = await post('/v1/jobs/next-batch', { session, size: 1 });
        assert.equal(taken.status, 200, JSON.stringify(taken.body));
        const [job] = taken.body['jobs'] as { id: number; epoch: number }[];
        assert.ok(job !== undefined);

        const before = { audit: await store.observe.auditMaxId(), tables: await dumpTables(db, raw) };
        const member = { id: job.id, epoch: job.epoch, status: 'failed', exitCod: 3 };
        for (const [path, body, unknown] of [
          ['/v1/tasks', { key: 'new', priorty: 5, tittle: 'x' }, ['priorty', 'tittle']],
          ['/v1/jobs', { key: 'new', ramMB: 99_999_999 }, ['ramMB']],
          ['/v1/sessions', { host: 'h1', ttll: '1h' }, ['ttll']],
          ['/v1/jobs/finish-batch', { session, finish: [member] }, ['finish.0.exitCod']],
          ['/v1/claims/held', { sesion: session }, ['sesion']],
        ] as const) {
          const r = await post(path, body);
          assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
          const error = r.body['error'] as { code: string; message: string; hint: string; details: Schema };
          assert.equal(error.code, 'invalid_input');
          const route = path === '/v1/claims/held' ? 'POST /v1/claims/{key}' : `POST ${path}`;
          const names = unknown.map((name) => `"${name}"`).join(', ');
          assert.equal(
            error.message,
            `unknown field${unknown.length > 1 ? 's' : ''} ${names} in the body of ${route}`,
          );
          assert.match(
            error.hint,
            new RegExp(`GET /openapi.json lists the fields of ${route.replace(/[{}]/g, '\\$&')}$`),
          );
          assert.deepEqual(error.details['unknown'], unknown);
        }
        assert.equal(await store.observe.auditMaxId(), before.audit, 'no ledger row was added');
        assert.equal(await dumpTables(db, raw), before.tables, 'nothing changed');
        assert.equal((await call(server.url, 'GET', '/v1/tasks/new', { token: secret })).status, 404);
        assert.equal((await store.jobs.list({ key: 'new' })).length, 0);

        const added = await post('/v1/tasks', { key: 'new', priority: 5, title: 'x' });
        assert.equal(added.status, 200, 'spelt right, the same body is taken');
        assert.deepEqual([added.body['priority'], added.body['title']], [5, 'x']);
        const finished = await post('/v1/jobs/finish-batch', {
          session,
          finish: [{ ...member, exitCod: undefined }],
        });
        assert.equal(finished.status, 200, JSON.stringify(finished.body));
        const listed = await call(server.url, 'GET', '/v1/tasks?utm_source=mail', { token: secret });
        assert.equal(listed.status, 200, 'an unknown query parameter of a read is ignored');
      } finally {
        await raw.close();
        await server.stop();
        await store.close();
      }
    });

    test('a route that takes no body refuses one with 400 naming it, and changes nothing', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'no-bodies' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h1', pid: 1 })).id;
        await store.tasks.add({ key: 'x' });
        await store.jobs.enqueue({ key: 'x', command: 'true' });
        const doc = (await call(server.url, 'GET', '/openapi.json')).body as unknown as Document;
        const bodiless = Object.entries(doc.paths).flatMap(([path, operations]) =>
          Object.entries(operations)
            .filter(([method, operation]) => method !== 'get' && operation['requestBody'] === undefined)
            .map(([method]) => [method.toUpperCase(), path] as const),
        );
        assert.ok(bodiless.length >= 5, `the document lists ${bodiless.length} routes without a body`);
        const before = { audit: await store.observe.auditMaxId(), tables: await dumpTables(db, raw) };
        for (const [method, path] of bodiless) {
          const concrete = path.replace('{id}', String(session)).replace(/\{\w+\}/g, 'x');
          const r = await call(server.url, method, concrete, { token: secret, body: { force: true } });
          const route = `${method} ${path}`;
          assert.equal(r.status, 400, `${route}: ${JSON.stringify(r.body)}`);
          const error = r.body['error'] as { code: string; message: string; hint: string };
          assert.equal(error.code, 'invalid_input', route);
          assert.equal(error.message, `${route} takes no body, got "{\\"force\\":true}"`);
          assert.equal(error.hint, `leave the body out: GET /openapi.json lists what ${route} takes`);
        }
        // An id is its digits alone: the forms JavaScript's Number() also reads (0x1 was job 1) are
        // refused, on the routes that change something too.
        const ids = ['abc', '0', '1.5', '-1', '99999999999999999999', '9007199254740992'];
        const lax = ['0x1', '0b1', '1e0', '+1', '%201', '1%20', '1.0', '01', '0001'];
        const paths = ['GET /v1/jobs/', 'POST /v1/jobs/{}/cancel', 'POST /v1/sessions/{}/end'];
        for (const [method, path] of paths.map((route) => route.split(' ') as [string, string]))
          for (const id of [...ids, ...lax]) {
            const where = path.includes('{}') ? path.replace('{}', id) : `${path}${id}`;
            const r = await call(server.url, method, where, { token: secret });
            assert.equal(r.status, 400, `${method} ${where}: ${JSON.stringify(r.body)}`);
            const { message } = r.body['error'] as { message: string };
            const got = decodeURIComponent(id);
            assert.equal(
              message,
              wholeNumberWords('id', 1, Number.MAX_SAFE_INTEGER, got),
              `${method} ${where}`,
            );
          }
        assert.equal(await store.observe.auditMaxId(), before.audit, 'no ledger row was added');
        assert.equal(await dumpTables(db, raw), before.tables, 'nothing changed');
        const end = `/v1/sessions/${session}/end`;
        for (const body of [undefined, {}]) {
          const ended = await call(server.url, 'POST', end, { token: secret, body });
          assert.equal(ended.status, 200, `${JSON.stringify(body)}: ${JSON.stringify(ended.body)}`);
        }
      } finally {
        await raw.close();
        await server.stop();
        await store.close();
      }
    });
  });
}
