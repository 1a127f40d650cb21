import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openStore } from '../../src/store/open.js';
import { handBack, postgresDatabase, postgresServers, type TestDatabase } from './databases.js';

/** A database from `fresh()` after `work` on a connection of the test's own, then handed back. */
async function usedAndHandedBack(
  db: TestDatabase,
  work: (client: pg.Client, url: string) => Promise<unknown>,
): Promise<string> {
  const url = await db.fresh();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await work(client, url);
  } finally {
    await client.end();
  }
  await handBack(db, url);
  return url;
}

const server = postgresServers()[0];
if (server === undefined) throw new Error('no PostgreSQL server for the tests (BATON_TEST_PG_SERVERS)');

// Each test has a database source, and so a pool, of its own: none takes another's database.
void describe('PostgreSQL test databases handed back (pg-recycle)', { concurrency: true }, () => {
  test('a used database comes back empty, its sequences rewound, as a new copy would be', async () => {
    const db = postgresDatabase(server);
    const url = await usedAndHandedBack(db, async (_client, used) => {
      const store = await openStore(used);
      try {
        await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
        await store.jobs.enqueue({ key: 'used' });
      } finally {
        await store.close();
      }
    });
    assert.equal(await db.fresh(), url, 'the used database is the next one handed out');
    const store = await openStore(url);
    try {
      assert.deepEqual(await store.tasks.list({ limit: 10 }), []);
      assert.equal((await store.audit.list({ limit: 10 })).length, 0);
      // Ids start where a new copy's do: the sequences were rewound.
      const again = (await store.jobs.enqueue({ key: 'again' })).job;
      const fresh = await openStore(await postgresDatabase(server).fresh());
      try {
        assert.equal(again.id, (await fresh.jobs.enqueue({ key: 'again' })).job.id);
      } finally {
        await fresh.close();
      }
    } finally {
      await store.close();
    }
  });

  test('a database with an object of its own, or a changed migration row, is not handed out again', async () => {
    const db = postgresDatabase(server);
    const extra = await usedAndHandedBack(db, (c) => c.query('CREATE TABLE extra (id int)'));
    const migrations = await usedAndHandedBack(db, (c) =>
      c.query('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)'),
    );
    const next = [await db.fresh(), await db.fresh()];
    assert.ok(!next.includes(extra), 'the database with an extra table');
    assert.ok(!next.includes(migrations), 'the database with a migration row gone');
  });

  test('a database someone is still connected to is not handed out again', async () => {
    const db = postgresDatabase(server);
    const url = await db.fresh();
    const left = await openStore(url);
    try {
      await usedAndHandedBack({ ...db, fresh: () => Promise.resolve(url) }, async () => {});
      const next = [await db.fresh(), await db.fresh()];
      assert.ok(!next.includes(url), 'the database with a store still open on it');
    } finally {
      await left.close();
    }
  });
});
