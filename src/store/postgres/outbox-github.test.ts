/**
 * jobs.github (migration 0025), which the GitHub outbox's job triggers read: a job inserted
 * without it, as by a process still running the code from before the migration, gets it from its
 * task's key, so its github: job still writes its outbox rows; a job inserted with it keeps it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresStore } from '../../../test/support/databases.js';
import type { Store } from '../store.js';

let client: pg.Client;
let store: Store;

before(async () => {
  ({ client, store } = await freshPostgresStore());
});

after(async () => {
  await store.close();
  await client.end();
});

/** Inserts a queued job for `key` as the code before migration 0025 did: no github column. */
async function insertAsBefore(key: string): Promise<{ id: string; github: boolean }> {
  const { rows } = await client.query<{ id: string; github: boolean }>(
    `INSERT INTO jobs (task_id, priority, queued_at)
     SELECT id, priority, now() FROM tasks WHERE key = $1 RETURNING id, github`,
    [key],
  );
  assert.ok(rows[0] !== undefined, key);
  return rows[0];
}

test('a job inserted without jobs.github takes it from its task key, and its outbox rows follow', async () => {
  await store.tasks.add({ key: 'github:acme/api#31' });
  await store.tasks.add({ key: 'local-31' });
  const github = await insertAsBefore('github:acme/api#31');
  const local = await insertAsBefore('local-31');
  assert.deepEqual([github.github, local.github], [true, false]);
  await store.jobs.cancel({ id: Number(github.id) });
  await store.jobs.cancel({ id: Number(local.id) });
  const causes = (await store.github.pending({ limit: 100 }))
    .filter((row) => row.cause.startsWith('job:'))
    .map((row) => `${row.key} ${row.cause}`);
  assert.deepEqual(causes, ['github:acme/api#31 job:queued', 'github:acme/api#31 job:cancelled']);
});

test('a job inserted with jobs.github keeps it: the store sets it, the trigger does not run', async () => {
  await store.tasks.add({ key: 'local-32' });
  const { rows } = await client.query<{ github: boolean }>(
    `INSERT INTO jobs (task_id, priority, queued_at, github)
     SELECT id, priority, now(), true FROM tasks WHERE key = 'local-32' RETURNING github`,
  );
  assert.equal(rows[0]?.github, true);
});
