/**
 * The dashboard's job page for a job that job retention removed (docs/decisions/0039): a 404 that
 * says it may have been removed and where its story still is, not a crash; the task's page lists
 * the jobs the task still has.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { freshSqlite, startTestServer } from './server.js';

test('the job page of a removed job says retention may have removed it; the task page shows the kept job', async () => {
  const server = await startTestServer(freshSqlite());
  try {
    const { job: old } = await server.store.jobs.enqueue({ key: 'a' });
    assert.ok((await server.store.jobs.cancel({ id: old.id })).ok);
    const { job: newest } = await server.store.jobs.retry({ id: old.id });
    const raw = new Database(server.db);
    raw.prepare('UPDATE jobs SET finished_at = finished_at - 2 * 86400000 WHERE id = ?').run(old.id);
    raw.close();
    const pruned = await server.store.retention.pruneJobs({ olderThanMs: 86_400_000, limit: 10 });
    assert.deepEqual(pruned.ok && pruned.removed, 1);
    const gone = await fetch(`${server.url}/jobs/${old.id}`);
    assert.equal(gone.status, 404);
    const text = (await gone.text()).replace(/\s+/g, ' ');
    assert.match(
      text,
      new RegExp(`not_found: job ${old.id} not found \\(it may have been removed by job retention`),
    );
    assert.match(text, new RegExp(`its ledger rows remain: baton audit --job ${old.id}\\)`));
    const task = await fetch(`${server.url}/tasks/a`);
    assert.equal(task.status, 200);
    const page = await task.text();
    assert.match(page, new RegExp(`/jobs/${newest.id}"`), 'the kept job is listed');
    assert.doesNotMatch(page, new RegExp(`/jobs/${old.id}"`), 'the removed one is not');
  } finally {
    await server.close();
  }
});
