/**
 * Migration 0050 on a database of the old schema, on every engine: GitHub issue keys stored in
 * another spelling of their repository (`github:Acme/API#7`) are renamed to the lower-case key every
 * command now names (decision 0013, "one issue, one key"), with their waiting outbox rows and sync
 * cursors; a pair already made (both spellings stored) is left for a person, and other keys keep
 * their case.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { allDatabases, type TestDatabase } from '../../test/support/databases.js';
import { rawSql } from '../../test/support/raw-sql.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

function open(db: TestDatabase, url: string, migrateTo?: number): Promise<Store> {
  const options = migrateTo === undefined ? {} : { migrateTo };
  return db.engine === 'sqlite'
    ? Promise.resolve(openSqliteStore({ path: url, ...options }))
    : openPostgresStore({ url, ...options });
}

/** Stored keys; the first of each pair renamed, the second as it was. */
const RENAMED = [
  ['github:Acme/API#7', 'github:acme/api#7'],
  ['github:ACME-1/My.Repo_x#1234567890', 'github:acme-1/my.repo_x#1234567890'],
] as const;
const KEPT = [
  'github:acme/web#1', // already lower case
  'github:Acme/Web#1', // its pair: two tasks for one issue already, for a person to settle
  'github:Acme_X/api#7', // no GitHub owner has "_": not an issue's key (parseIssueKey)
  'github:Acme/API', // no number
  'github:Acme/..#3', // no such repository name
  'GitHub:Acme/API#8', // another prefix
  'JIRA-12',
];

for (const db of allDatabases()) {
  describe(`migration 0050 on a ${db.name} database of the old schema`, () => {
    test('renames GitHub issue keys to lower case, with their outbox rows and cursors; keeps pairs', async () => {
      const url = await db.empty();
      await (await open(db, url, 49)).close();
      const raw = await rawSql(db, url);
      const param = (n: number) => (db.engine === 'sqlite' ? '?' : `$${n}`);
      const now = db.engine === 'sqlite' ? Date.now() : new Date();
      let store: Store | undefined;
      try {
        for (const key of [...RENAMED.map(([from]) => from), ...KEPT])
          await raw.exec(`INSERT INTO tasks (key, created_at) VALUES (${param(1)}, ${param(2)})`, [key, now]);
        // The insert trigger queued a label row for each github: key; the cursors as a sync spelled them.
        for (const repo of ['Acme/API', 'Acme/API labels:ai', 'acme/web', 'Acme/Web'])
          await raw.exec(
            `INSERT INTO github_sync (repo, since, synced_at) VALUES (${param(1)}, NULL, ${param(2)})`,
            [repo, now],
          );
        store = await open(db, url);
        const keys = (await store.tasks.list({ limit: 100 })).map((t) => t.key).sort();
        assert.deepEqual(keys, [...RENAMED.map(([, to]) => to), ...KEPT].sort());
        const outbox = (await raw.exec('SELECT task_key FROM github_outbox ORDER BY task_key')).map((r) =>
          String(r['task_key']),
        );
        for (const [from, to] of RENAMED) {
          assert.ok(outbox.includes(to) && !outbox.includes(from), `${from}'s outbox rows move with it`);
        }
        assert.ok(outbox.includes('github:Acme/Web#1'), "a pair's rows stay with their task");
        const cursors = (await raw.exec('SELECT repo FROM github_sync ORDER BY repo')).map((r) =>
          String(r['repo']),
        );
        assert.deepEqual(cursors.sort(), ['Acme/Web', 'acme/api', 'acme/api labels:ai', 'acme/web'].sort());
      } finally {
        await store?.close();
        await raw.close();
      }
    });
  });
}
