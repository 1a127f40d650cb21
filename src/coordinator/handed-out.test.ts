import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/open.js';
import { bothEngines } from '../../test/support/databases.js';
import { rawSql } from '../../test/support/raw-sql.js';
import { refuseUnhandedOut } from './handed-out.js';

for (const db of bothEngines()) {
  describe(`what an agent may claim (${db.name})`, () => {
    test('fails closed: a dependencies read that fails refuses the claim, never lets it past', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const raw = await rawSql(db, url);
      try {
        await store.tasks.add({ key: 'dep' });
        await store.tasks.add({ key: 'blocked' });
        await store.lifecycle.depend({ key: 'blocked', on: 'dep', by: { name: 'test' } });
        const session = (await store.sessions.start({ kind: 'agent', host: 'box', pid: 1, ttlMs: 60_000 }))
          .id;
        await assert.rejects(refuseUnhandedOut(store, 'blocked', session), { name: 'Refusal' });
        // The edges can no longer be read (a real failure of the database's, not a stand-in).
        await raw.exec('ALTER TABLE task_deps RENAME TO task_deps_gone');
        await assert.rejects(refuseUnhandedOut(store, 'blocked', session), (error: Error) => {
          assert.notEqual(error.name, 'Refusal');
          assert.match(error.message, /task_deps/);
          return true;
        });
        // A task that is not open, or unknown, is left to the grant without reading the edges.
        await refuseUnhandedOut(store, 'nope', session);
      } finally {
        await raw.close();
        await store.close();
      }
    });
  });
}
