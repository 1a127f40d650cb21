/**
 * Random and malformed requests to every dashboard and /metrics route: each gets a page, a 4xx
 * with one line, never a 5xx, and the database is unchanged (the dashboard has no write path).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Hono } from 'hono';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { dashboardRoutes } from '../../src/dashboard/routes.js';
import { metricsRoutes } from '../../src/http/metrics.js';
import { openStore } from '../../src/store/open.js';
import { freshSqlite } from './server.js';
import { seedFleet } from './seed.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PATHS = [
  '/',
  '/claims',
  '/leader',
  '/hosts',
  '/workspaces',
  '/audit',
  '/jobs/',
  '/tasks',
  '/tasks/',
  '/ui/frag/queue',
  '/ui/frag/claims',
  '/ui/frag/audit',
  '/ui/frag/job/',
  '/ui/frag/tasks',
  '/ui/frag/task/',
  '/ui/frag/output/',
  '/ui/frag/',
  '/ui/',
  '/metrics',
];
const KEYS = [
  ...['status', 'host', 'key', 'before', 'limit', 'session', 'job', 'type', 'after'],
  ...['state', 'label', 'project', 'blocked'],
];

test('random and malformed requests get a page or a 4xx, never a 5xx, and change nothing', async () => {
  const store = await openStore(freshSqlite());
  try {
    await seedFleet(store, mkdtempSync(join(tmpdir(), 'baton-logs-')));
    const coordinator = new Coordinator(store);
    const app = new Hono();
    app.route('/metrics', metricsRoutes({ reads: coordinator.views }));
    app.route('/', dashboardRoutes({ reads: coordinator.views }));
    const mark = await coordinator.views.changeMark();
    const junk = fc.oneof(
      fc.string(),
      fc.integer().map(String),
      fc.constantFrom(
        '',
        '0',
        '-1',
        '1e400',
        '9007199254740993',
        'queued',
        'running,done',
        'open',
        'any',
        'on',
        '%',
        '%zz',
        '\u0000',
        'ü',
      ),
    );
    const request = fc.record({
      path: fc.constantFrom(...PATHS),
      tail: fc.oneof(
        fc.constant(''),
        junk.map((s) => encodeURIComponent(s)),
        fc.constantFrom('%', '%zz', '1', '99999'),
      ),
      query: fc.array(fc.tuple(fc.constantFrom(...KEYS), junk), { maxLength: 4 }),
      method: fc.constantFrom('GET', 'GET', 'GET', 'POST', 'HEAD'),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const search = r.query.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
        const url = `http://dash${r.path}${r.path.endsWith('/') ? r.tail : ''}${search === '' ? '' : `?${search}`}`;
        // The event stream never ends by design; it is tested in the browser.
        if (url.includes('/ui/events')) return;
        const response = await app.request(url, { method: r.method });
        const text = await response.text();
        assert.ok(response.status < 500, `${r.method} ${url}: ${response.status} ${text}`);
      }),
      { numRuns: 2000, seed: 17 },
    );
    assert.equal(await coordinator.views.changeMark(), mark);
  } finally {
    await store.close();
  }
});

test("a fragment named as one of Object's own properties is no view: 404, one line", async () => {
  const store = await openStore(freshSqlite());
  try {
    const app = new Hono();
    app.route('/', dashboardRoutes({ reads: new Coordinator(store).views }));
    for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'valueOf', 'toString', 'nosuch']) {
      for (const path of [`/ui/frag/${name}`, `/ui/frag/${name}/1`]) {
        const response = await app.request(`http://dash${path}`);
        const text = await response.text();
        assert.equal(response.status, 404, `${path}: ${text}`);
        assert.equal(text, `<p role="alert">no view ${name}</p>`, path);
      }
    }
  } finally {
    await store.close();
  }
});

test('the audit view filtered by a task no one added is 404 naming it, as GET /v1/audit is', async () => {
  const store = await openStore(freshSqlite());
  try {
    await store.tasks.add({ key: 'quiet', title: 'a task with rows' });
    const app = new Hono();
    app.route('/', dashboardRoutes({ reads: new Coordinator(store).views }));
    for (const path of ['/audit?key=nope', '/ui/frag/audit?key=nope']) {
      const response = await app.request(`http://dash${path}`);
      const text = await response.text();
      assert.equal(response.status, 404, `${path}: ${text}`);
      assert.match(text, /task nope not found/, path);
    }
    // A task that exists answers its rows; an older page past a task's rows is empty, not a 404.
    const known = await app.request('http://dash/ui/frag/audit?key=quiet');
    assert.equal(known.status, 200);
    assert.match(await known.text(), /task:added/);
    const past = await app.request('http://dash/ui/frag/audit?key=nope&before=1');
    assert.equal(past.status, 200, await past.text());
  } finally {
    await store.close();
  }
});
