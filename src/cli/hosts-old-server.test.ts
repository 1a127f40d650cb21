/**
 * A new CLI asking an older `baton serve` (one from before host liveness) over the API: its
 * GET /v1/hosts carries no `liveness` nor `lastReportAgeMs`. `baton hosts` printed nothing but a
 * crash; it shows the host's raw last report with `?`, and a line saying why.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freshSqlite, startTestServer } from '../../test/dashboard/server.js';
import { repoRoot } from '../../test/support/cli.js';
import { givenHost } from '../store/conformance/dispatch.js';

/** GET `path` (query left out) as an older server answers it, the rest 404; `asked` collects the URLs. */
async function olderServer(
  body: unknown,
  path = '/v1/hosts',
  asked: string[] = [],
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    asked.push(request.url ?? '');
    const found = request.method === 'GET' && request.url?.split('?')[0] === path;
    response.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(found ? body : { error: { code: 'not_found', message: 'no such route' } }));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) };
}

function baton(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_URL: url, BATON_TOKEN: 'not-checked' };
  delete env['BATON_DB'];
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/baton.js', ...args],
      { cwd: repoRoot(), env },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

describe('baton hosts against an older baton serve', () => {
  test('shows the raw last report with ? where the server sent no liveness, and says why', async () => {
    const current = await startTestServer(freshSqlite());
    let hosts: Record<string, unknown>[];
    try {
      await givenHost(current.store, 'box-1');
      hosts = (await (await fetch(`${current.url}/v1/hosts`)).json()) as Record<string, unknown>[];
    } finally {
      await current.close();
    }
    const old = hosts.map(({ liveness: _liveness, lastReportAgeMs: _age, ...rest }) => rest);
    assert.equal(old.length, 1);
    const server = await olderServer(old);
    try {
      const shown = await baton(server.url, 'hosts');
      assert.equal(shown.code, 0, shown.stderr);
      const row = shown.stdout.split('\n').find((line) => line.startsWith('box-1 ')) ?? '';
      assert.ok(row.endsWith(`${String(old[0]?.['heartbeatAt'])}, ?`), row);
      assert.match(
        shown.stdout,
        /^the API server predates host liveness: LAST_REPORT is its raw last report/m,
      );
      assert.doesNotMatch(shown.stdout, /is down|has not reported/, 'no host is judged down or silent');
    } finally {
      await server.close();
    }
  });
});

describe('baton task list against a baton serve from before task dependencies', () => {
  test('lists without WAITS_FOR where the server sent no waitsFor, and refuses --blocked it would ignore', async () => {
    const current = await startTestServer(freshSqlite());
    let tasks: Record<string, unknown>[];
    try {
      await current.store.tasks.add({ key: 'a' });
      await current.store.tasks.add({ key: 'b' });
      tasks = (await (await fetch(`${current.url}/v1/tasks`)).json()) as Record<string, unknown>[];
    } finally {
      await current.close();
    }
    const old = tasks.map(({ waitsFor: _waitsFor, ...rest }) => rest);
    const asked: string[] = [];
    const server = await olderServer(old, '/v1/tasks', asked);
    try {
      const listed = await baton(server.url, 'task', 'list');
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^a /m);
      assert.match(listed.stdout, /^b /m);
      assert.doesNotMatch(listed.stdout, /WAITS_FOR/);
      const blocked = await baton(server.url, 'task', 'list', '--blocked');
      assert.equal(blocked.code, 2, blocked.stdout);
      assert.equal(blocked.stdout, '');
      assert.match(
        blocked.stderr,
        /^baton: the API server predates task dependencies: it cannot list by --blocked — upgrade baton/,
      );
      assert.equal(blocked.stderr.trim().split('\n').length, 1, blocked.stderr);
      assert.ok(
        asked.some((url) => url.includes('blocked=true')),
        asked.join(' '),
      );
      // From before paging too: the first page again for --after, which a script would follow for ever.
      const paged = await baton(server.url, 'task', 'list', '--after', 'b');
      assert.equal(paged.code, 2, paged.stdout);
      assert.equal(paged.stdout, '');
      assert.match(
        paged.stderr,
        /^baton: the API server predates task list paging: it answered the first page/,
      );
      assert.equal(paged.stderr.trim().split('\n').length, 1, paged.stderr);
    } finally {
      await server.close();
    }
  });
});
