/**
 * A process that opened the SQLite file before `baton db copy` moved it (a `baton serve`, which holds
 * no session, so the copy's checks cannot see it) must not write into the old file afterwards: that
 * write would be acknowledged and never read again. The copy fences every table with triggers in the
 * transaction that writes the mark (store/sqlite/moved.ts), so the database itself refuses the write,
 * and the serve answers it as an open of the moved file does: exit 3 from the CLI, one line naming it.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { baton, batonIn, servedApi, stopServers, type Run } from '../../test/support/cli.js';
import { postgresDatabase, postgresServers, sqliteDatabase } from '../../test/support/databases.js';
import { assertOneErrorLine } from '../../test/support/cli-suite.js';
import { targetRows } from '../../test/support/copy-target.js';

async function ok(db: string, ...args: string[]): Promise<Run> {
  const run = await baton(db, ...args);
  assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
  return run;
}

/** Every row of every table but the ones the copy writes (settings: its mark). */
function rowsOf(path: string): Record<string, unknown> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'settings' ORDER BY name`)
      .pluck()
      .all() as string[];
    return Object.fromEntries(tables.map((table) => [table, db.prepare(`SELECT * FROM "${table}"`).all()]));
  } finally {
    db.close();
  }
}

after(stopServers);

test('a baton serve opened before the copy cannot write into the moved file; reads still answer', async () => {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  const src = await sqliteDatabase().fresh();
  const to = await postgresDatabase(first).empty();
  const keyFile = join(mkdtempSync(join(tmpdir(), 'baton-copy-key-')), 'ledger.key');
  await ok(src, 'task', 'add', 'a1', '--title', 'before the move');
  await servedApi(src);
  const remote = (args: string[]): Promise<Run> => batonIn('api', src, ...args);
  assert.equal((await remote(['task', 'list'])).code, 0, 'the serve answers before the copy');
  await ok(src, 'ledger', 'init', '--key-file', keyFile);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  const copied = await ok(src, 'db', 'copy', '--to', to);
  // docs/operations.md: the password goes in PGPASSWORD or ~/.pgpass, never in the URL; and
  // docs/security.md: the roles split, everything but migrations under the runtime role.
  assert.match(copied.stdout, /db roles --owner <owner> --runtime <runtime role>/);
  assert.match(
    copied.stdout,
    /BATON_DB=postgres:\/\/<runtime role>@\S+, its password in PGPASSWORD or ~\/.pgpass/,
  );
  assert.doesNotMatch(copied.stdout, /with its password/);
  const before = rowsOf(src);

  const added = await remote(['task', 'add', 'after-move', '--title', 'lost if written']);
  const line = assertOneErrorLine(added, 3, 'the serve writing after the move');
  assert.match(line, /was moved by baton db copy \(moved to postgres:\/\/.* at \d{4}-/);
  assert.match(line, /BATON_DB=<postgres url>, its password in PGPASSWORD or ~\/.pgpass, never in the URL/);
  const enqueued = await remote(['enqueue', 'after-move-job', '--command', 'true']);
  assert.equal(enqueued.code, 3, `enqueue through the serve: ${enqueued.stderr}`);
  const listed = await remote(['task', 'list']);
  assert.equal(listed.code, 0, `reads still answer: ${listed.stderr}`);
  assert.match(listed.stdout, /a1/);
  assert.deepEqual(rowsOf(src), before, 'nothing written into the moved file');
  // Whoever's connection writes, the file refuses it: the triggers are in the database, not in Baton.
  const raw = new Database(src);
  try {
    assert.throws(() => raw.prepare(`UPDATE tasks SET title = 'x'`).run(), /moved by baton db copy/);
  } finally {
    raw.close();
  }
  const counts = await targetRows(to);
  assert.equal(counts['tasks'], 1, 'the new database has the task written before the move, and only it');
  assert.equal((await baton(src, 'audit', 'verify')).code, 0, 'the old ledger still verifies');
});

test("the moved file's evidence still reads after Baton adds a migration; uses still refuse it as moved", async () => {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  const src = await sqliteDatabase().fresh();
  const keyFile = join(mkdtempSync(join(tmpdir(), 'baton-copy-key-')), 'ledger.key');
  await ok(src, 'task', 'add', 'a1');
  await ok(src, 'ledger', 'init', '--key-file', keyFile);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  await ok(src, 'db', 'copy', '--to', await postgresDatabase(first).empty());
  // As if this Baton knew one more migration than the file got: the file is one schema behind.
  const raw = new Database(src);
  try {
    raw.exec('DROP TRIGGER "baton_moved_delete_schema_migrations"');
    raw.exec('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)');
  } finally {
    raw.close();
  }
  const exported = await baton(src, 'audit', 'export', '--format', 'jsonl');
  assert.equal(exported.code, 0, `audit export of the moved file: ${exported.stderr}`);
  assert.match(exported.stdout, /"record":"end"/);
  assert.equal((await baton(src, 'audit', 'verify')).code, 0, 'audit verify of the moved file');
  const used = await baton(src, 'task', 'list');
  assert.equal(used.code, 3);
  assert.match(used.stderr, /was moved by baton db copy/, 'refused as moved, not sent to baton db migrate');
});
