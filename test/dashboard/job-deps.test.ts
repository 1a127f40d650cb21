/**
 * The dashboard's job page names its task's dependencies (docs/decisions/0035-task-dependencies.md):
 * what the task waits for, each with its state, and what waits for it, so an operator sees why a
 * queued job is not placed without reaching for `baton task show`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshSqlite, startTestServer } from './server.js';

test('the job page lists what its task waits for and what waits for it, each with its state', async () => {
  const server = await startTestServer(freshSqlite());
  try {
    const by = { name: 'alice@box' };
    const { job: a } = await server.store.jobs.enqueue({ key: 'a' });
    const { job: b } = await server.store.jobs.enqueue({ key: 'b' });
    await server.store.tasks.add({ key: 'z' });
    await server.store.lifecycle.depend({ key: 'b', on: 'a', by });
    await server.store.lifecycle.depend({ key: 'b', on: 'z', by });
    await server.store.lifecycle.transition({ key: 'z', action: 'complete', by });
    const page = async (id: number): Promise<string> => {
      const response = await fetch(`${server.url}/jobs/${id}`);
      assert.equal(response.status, 200);
      return (await response.text()).replace(/\s+/g, ' ');
    };
    assert.match(
      await page(b.id),
      /<dt>Task waits for<\/dt> <dd><a href="\/tasks\/a">a<\/a> \(open\), <a href="\/tasks\/z">z<\/a> \(done\)<\/dd>/,
    );
    assert.doesNotMatch(await page(b.id), /Waited for by/);
    assert.match(await page(a.id), /<dt>Waited for by<\/dt> <dd><a href="\/tasks\/b">b<\/a> \(open\)<\/dd>/);
    assert.doesNotMatch(await page(a.id), /Task waits for/);
  } finally {
    await server.close();
  }
});
