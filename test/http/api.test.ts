/**
 * `baton serve` and `baton up` as real processes: the URL line, the next free port when the asked
 * one is taken, a bind beyond loopback refused without `--auth required`, /healthz and /readyz,
 * the OpenAPI document, reads behind `--auth required`, and a server that outlives random requests.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import fc from 'fast-check';
import { baton, cliOn } from '../support/cli.js';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, serve } from './support.js';

const CONTRACT = [
  'post /v1/tasks',
  'get /v1/tasks/{key}',
  'post /v1/sessions',
  'post /v1/claims/{key}',
  'post /v1/claims/{key}/heartbeat',
  'post /v1/claims/{key}/release',
  'post /v1/jobs',
  'get /v1/jobs',
  'get /v1/jobs/{id}',
  'post /v1/jobs/{id}/cancel',
  'get /v1/leader',
  'get /v1/hosts',
  'get /v1/audit',
  'get /v1/audit/follow',
];

interface Operation {
  parameters?: { name: string; in: string }[];
  responses?: Record<string, unknown>;
}

void describe('baton serve', () => {
  // A named port another process holds is refused, and only the default moves on: test/http/port-taken.test.ts.
  test('prints one line with its URL', async () => {
    const db = await sqliteDatabase().fresh();
    const server = await serve(db, ['serve', '--http', '127.0.0.1:0']);
    try {
      assert.equal(server.lines.length, 1);
      assert.match(server.lines[0] ?? '', /http:\/\/127\.0\.0\.1:\d+/);
      assert.deepEqual((await call(server.url, 'GET', '/healthz')).body, { ok: true });
    } finally {
      await server.stop();
    }
  });

  test('refuses a bind beyond loopback unless every request needs a token, in one line, exit 2', async () => {
    const db = await sqliteDatabase().fresh();
    const run = await baton(db, 'serve', '--http', '0.0.0.0:0');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^baton: refusing to serve on 0\.0\.0\.0.*--auth required/);
    assert.equal(run.stderr.trim().split('\n').length, 1);
    const bad = await baton(db, 'serve', '--http', 'nonsense');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--http must be host:port/);
  });

  test('with --auth required, reads need a token too; health and readiness do not', async () => {
    const db = await sqliteDatabase().fresh();
    const viewer = await cliOn(db).json<{ token: string }>(0, 'token', 'create', '--scope', 'viewer');
    const server = await serve(db, ['serve', '--http', '127.0.0.1:0', '--auth', 'required']);
    try {
      assert.equal((await call(server.url, 'GET', '/v1/hosts')).status, 401);
      assert.equal((await call(server.url, 'GET', '/')).status, 401);
      assert.equal((await call(server.url, 'GET', '/v1/hosts', { token: viewer.token })).status, 200);
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200);
      assert.equal((await call(server.url, 'GET', '/readyz')).status, 200);
    } finally {
      await server.stop();
    }
  });

  test('open reads answer a loopback Host only: a page rebound to 127.0.0.1 reads nothing', async () => {
    const db = await sqliteDatabase().fresh();
    const viewer = await cliOn(db).json<{ token: string }>(0, 'token', 'create', '--scope', 'viewer');
    const server = await serve(db, ['serve', '--http', '127.0.0.1:0']);
    try {
      const { port } = new URL(server.url);
      const asHost = (host: string, path: string, token?: string, more: Record<string, string> = {}) =>
        new Promise<number>((resolve, reject) => {
          const headers: Record<string, string> = { host, ...more };
          if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
          const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          req.end();
        });
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost'])
        assert.equal(await asHost(host, '/v1/tasks'), 200, host);
      for (const path of ['/v1/tasks', '/', '/v1/audit', '/metrics'])
        assert.equal(await asHost(`rebound.example:${port}`, path), 401, path);
      // A credential that opens nothing (any bearer, any cookie) does not make a rebound page's read open.
      const pages = ['/', '/audit', '/metrics', '/jobs/1', '/ui/frag/output/1', '/v1/tasks'];
      for (const path of pages) {
        assert.equal(await asHost(`rebound.example:${port}`, path, 'junk'), 401, `${path}, a junk bearer`);
        const cookie = { cookie: 'baton_token=junk' };
        assert.equal(
          await asHost(`rebound.example:${port}`, path, undefined, cookie),
          401,
          `${path}, a junk cookie`,
        );
      }
      assert.equal(
        await asHost(`localhost:${port}`, '/', undefined, { cookie: 'baton_token=junk' }),
        200,
        'loopback',
      );
      assert.equal(
        await asHost(`rebound.example:${port}`, '/v1/tasks', viewer.token),
        200,
        'a token opens it',
      );
      assert.equal(
        await asHost(`rebound.example:${port}`, '/audit', viewer.token),
        200,
        'a token opens a page',
      );
    } finally {
      await server.stop();
    }
  });

  test('an old baton_token cookie (it held the secret signed in with) is deleted, whatever the mode', async () => {
    const db = await sqliteDatabase().fresh();
    const viewer = await cliOn(db).json<{ token: string }>(0, 'token', 'create', '--scope', 'viewer');
    const cookieOf = (url: string, path: string, method = 'GET') =>
      new Promise<{ status: number; cookies: readonly string[] }>((resolve, reject) => {
        const { port } = new URL(url);
        const headers = { cookie: `baton_token=${viewer.token}`, accept: 'text/html', origin: url };
        const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, cookies: res.headers['set-cookie'] ?? [] }),
          );
        });
        req.on('error', reject);
        req.end();
      });
    const deleted = (cookies: readonly string[]): boolean =>
      cookies.some((one) => /^baton_token=;/.test(one) && /Max-Age=0/i.test(one));
    for (const mode of [[], ['--auth', 'required']]) {
      const server = await serve(db, ['serve', '--http', '127.0.0.1:0', ...mode]);
      try {
        for (const [path, method] of [
          ['/', 'GET'],
          ['/audit', 'GET'],
          ['/logout', 'POST'],
        ] as const) {
          const got = await cookieOf(server.url, path, method);
          assert.ok(
            deleted(got.cookies),
            `${mode.join(' ')} ${method} ${path}: ${got.status} ${got.cookies.join(' | ')}`,
          );
        }
        // Never read: the old cookie opens nothing where a token is needed.
        if (mode.length > 0) assert.equal((await cookieOf(server.url, '/')).status, 303);
      } finally {
        await server.stop();
      }
    }
  });

  test('serves a valid OpenAPI 3.1 document that lists every route of the contract', async () => {
    const server = await serve(await sqliteDatabase().fresh());
    try {
      const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
        openapi: string;
        info: { title: string; version: string };
        paths: Record<string, Record<string, Operation>>;
        components?: { schemas?: Record<string, unknown> };
      };
      assert.equal(doc.openapi, '3.1.0');
      assert.equal(typeof doc.info.title, 'string');
      const listed = Object.entries(doc.paths).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m} ${p}`),
      );
      for (const route of CONTRACT) assert.ok(listed.includes(route), `${route} is in /openapi.json`);
      for (const [path, ops] of Object.entries(doc.paths)) {
        const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        for (const [method, op] of Object.entries(ops)) {
          assert.ok(op.responses !== undefined && '200' in op.responses, `${method} ${path} documents 200`);
          assert.ok(
            '400' in op.responses && '403' in op.responses,
            `${method} ${path} documents its refusals`,
          );
          const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
          assert.deepEqual(
            declared.sort(),
            [...inPath].sort(),
            `${method} ${path} declares its path parameters`,
          );
        }
      }
      // Every reference resolves to a schema of the document.
      const text = JSON.stringify(doc);
      for (const [, name] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
        assert.ok(doc.components?.schemas?.[name ?? ''] !== undefined, `schema ${name} is defined`);
      }
    } finally {
      await server.stop();
    }
  });

  test('survives random requests: each is answered below 500 and the process stays up', async () => {
    const server = await serve(await sqliteDatabase().fresh());
    try {
      const paths = [
        '/v1/tasks',
        '/v1/claims/',
        '/v1/jobs/',
        '/v1/sessions',
        '/v1/tokens',
        '/v1/next',
        '/metrics',
        '/',
      ];
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...paths),
          fc.string(),
          fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'),
          fc.string(),
          async (path, tail, method, body) => {
            const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
            if (method !== 'GET') init.body = body;
            const response = await fetch(`${server.url}${path}${encodeURIComponent(tail)}`, init);
            await response.arrayBuffer();
            assert.ok(response.status < 500, `${method} ${path}${tail}: ${response.status}`);
          },
        ),
        { numRuns: 300 },
      );
      assert.equal(server.child.exitCode, null);
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200);
    } finally {
      await server.stop();
    }
  });
});

for (const db of bothEngines()) {
  void describe(`readiness (${db.name})`, () => {
    test('/readyz is ready on a migrated database and not ready once another process migrated past this one', async () => {
      const url = await db.fresh();
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const ready = await call(server.url, 'GET', '/readyz');
        assert.equal(ready.status, 200);
        assert.equal(ready.body['ok'], true);
        // The database's clock (`baton doctor --api` judges this machine's by it): ISO, and today's.
        const now = Date.parse(String(ready.body['now']));
        assert.ok(Math.abs(now - Date.now()) < 60 * 60_000, String(ready.body['now']));
        const p = db.engine === 'sqlite' ? ['?', '?', '?'] : ['$1', '$2', '$3'];
        const at = db.engine === 'sqlite' ? 0 : new Date(0);
        await raw.exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${p.join(', ')})`, [
          999,
          'from-the-future',
          at,
        ]);
        const behind = await call(server.url, 'GET', '/readyz');
        assert.equal(behind.status, 503);
        assert.match(String(behind.body['message']), /migration 999/);
      } finally {
        await raw.close();
        await server.stop();
      }
    });
  });
}

void describe('baton up', () => {
  test('prints the URL it serves the dashboard on, and serves the page', async () => {
    const db = await sqliteDatabase().fresh();
    const up = await serve(db, ['up', '--http', '127.0.0.1:0', '--host', 'up-test']);
    try {
      assert.ok(up.lines.some((l) => /serving the API and dashboard on http:\/\/127\.0\.0\.1:\d+/.test(l)));
      const page = await fetch(`${up.url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
    } finally {
      assert.equal(await up.stop(), 0);
    }
  });
});
