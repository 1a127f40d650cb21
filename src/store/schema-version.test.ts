/**
 * A database migrated by a build that listed a later migration before an earlier one (0040 merged
 * before 0038 and 0039 once, decision 0043) has its newest row and a gap below it. It must read as
 * older than this baton (refused as it is, with the command that fixes it) and be given what it
 * missed by a migrate, on both engines (schema-version.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from './open.js';
import { bothEngines } from '../../test/support/databases.js';
import { rawSql } from '../../test/support/raw-sql.js';

for (const db of bothEngines()) {
  describe(`a schema with a gap (${db.name})`, () => {
    test('reads as older, is refused as it is, and a migrate applies the missing migration', async () => {
      const url = await db.fresh();
      await (await openStore(url)).close();
      const raw = await rawSql(db, url);
      try {
        // Migration 0039 never ran here, 0040 (and so the newest row) did.
        await raw.exec('DROP INDEX jobs_rare_finishes');
        await raw.exec('DELETE FROM schema_migrations WHERE version = 39');
        await assert.rejects(
          openStore(url, { intent: 'use' }),
          /schema is at version 38, older than this baton/,
        );
        const store = await openStore(url, { intent: 'migrate' });
        try {
          const schema = await store.schema();
          assert.equal(schema.applied, schema.known);
        } finally {
          await store.close();
        }
        assert.equal((await raw.exec('SELECT version FROM schema_migrations WHERE version = 39')).length, 1);
        const index =
          db.engine === 'sqlite'
            ? "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'jobs_rare_finishes'"
            : "SELECT 1 FROM pg_indexes WHERE indexname = 'jobs_rare_finishes'";
        assert.equal((await raw.exec(index)).length, 1, 'the missing migration ran');
      } finally {
        await raw.close();
      }
    });
  });
}
