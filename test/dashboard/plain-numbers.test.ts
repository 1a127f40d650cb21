/**
 * A whole number in a dashboard address is written as Baton writes it, as the API reads it
 * (decision 0055): `/?limit=05`, `/jobs/05`, `+5`, ` 5`, `5.0`, `1e1` get a 400 page naming the
 * parameter, the form and what was given, with the number it likely meant, on whole pages and on
 * the fragments htmx reloads; the plain digits still answer 200.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hono } from 'hono';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { dashboardRoutes } from '../../src/dashboard/routes.js';
import { openStore } from '../../src/store/open.js';
import { freshSqlite } from './server.js';

const FORM = 'must be a whole number in plain digits (no sign, spaces, decimals, exponent or leading zeros)';
const unescaped = (page: string): string => page.replaceAll('&quot;', '"').replaceAll('&#39;', "'");

test('odd numbers in a dashboard address are refused with a 400 naming them; plain digits answer', async () => {
  const store = await openStore(freshSqlite());
  try {
    await store.tasks.add({ key: 'k1', title: 'one' });
    const { job } = await store.jobs.enqueue({ key: 'k1' });
    const app = new Hono();
    app.route('/', dashboardRoutes({ reads: new Coordinator(store).views }));
    const refused: readonly [path: string, name: string, got: string, hint: string][] = [
      ['/?limit=05', 'limit', '05', 'write it as 5'],
      ['/tasks?limit=%2B5', 'limit', '+5', 'write it as 5'],
      ['/?before=1e1', 'before', '1e1', 'write it as Baton prints it, such as 5'],
      ['/audit?session=%205', 'session', ' 5', 'write it as 5'],
      ['/audit?job=5.0', 'job', '5.0', 'write it as Baton prints it, such as 5'],
      [`/jobs/0${job.id}`, 'the job id', `0${job.id}`, `write it as ${job.id}`],
      ['/ui/frag/queue?limit=005', 'limit', '005', 'write it as 5'],
      [`/ui/frag/job/0${job.id}`, 'the job id', `0${job.id}`, `write it as ${job.id}`],
      [`/ui/frag/output/0${job.id}`, 'the job id', `0${job.id}`, `write it as ${job.id}`],
    ];
    for (const [path, name, got, hint] of refused) {
      const response = await app.request(path);
      const body = unescaped(await response.text());
      assert.equal(response.status, 400, `${path}: ${body}`);
      assert.ok(
        body.includes(`invalid_input: ${name}: ${FORM}, got ${JSON.stringify(got)} (${hint})`),
        `${path}: ${body}`,
      );
    }
    const fine = ['/?limit=5', '/tasks?limit=10&before=1', '/audit?session=1&job=1', `/jobs/${job.id}`];
    for (const path of [...fine, `/ui/frag/job/${job.id}`, `/ui/frag/output/${job.id}`, '/?limit=']) {
      const response = await app.request(path);
      assert.equal(response.status, 200, `${path}: ${await response.text()}`);
    }
  } finally {
    await store.close();
  }
});
