/**
 * Issue 14, items 9, 10 and 12: only `baton up` and `baton init` create a database; every other
 * command refuses a missing SQLite path or a database without Baton's tables (exit 4, one line,
 * nothing created); no command but those and `baton db migrate` changes the schema, so an older
 * schema is refused (exit 3) with the command that migrates it; a running `baton up` stops when
 * another process migrates past what it knows; a damaged file is named as such.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baton, batonBare, type Run } from '../support/cli.js';
import { bothEngines, type TestDatabase } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/store/postgres/migrations/index.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/index.js';
import { clusterFixture } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

function oneLine(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', pattern);
}

/** A database with every migration but the last: what an older baton left. */
/** A database one migration behind this baton: at the engine's previous version (numbers may skip). */
async function oneBehind(db: TestDatabase): Promise<{ url: string; known: number; previous: number }> {
  const url = await db.empty();
  const migrations = db.engine === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS;
  const versions = migrations.map((m) => m.version).sort((a, b) => a - b);
  const known = versions.at(-1) ?? 0;
  const previous = versions.at(-2) ?? 0;
  const old =
    db.engine === 'sqlite'
      ? openSqliteStore({ path: url, migrateTo: previous })
      : await openPostgresStore({ url, migrateTo: previous });
  await old.close();
  return { url, known, previous };
}

async function appliedVersion(db: TestDatabase, url: string): Promise<number> {
  const raw = await rawSql(db, url);
  try {
    const [row] = await raw.exec('SELECT max(version) AS v FROM schema_migrations');
    return Number(row?.['v']);
  } finally {
    await raw.close();
  }
}

describe('a missing SQLite database', () => {
  test('is refused by every command but up and init, in one line, exit 4, creating nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-missing-'));
    const db = join(dir, 'sub', 'baton.db');
    const commands = [
      ['task', 'list'],
      ['task', 'add', 'k1'],
      ['queue', 'list'],
      ['enqueue', 'k1', '--command', 'true'],
      ['session', 'start'],
      ['hosts'],
      ['leader'],
      ['audit'],
      ['db', 'migrate'],
      ['serve', '--http', '127.0.0.1:0'],
    ];
    for (const args of commands) {
      oneLine(await baton(db, ...args), 4, /^baton: database .*baton\.db not found — .*`baton init`/);
    }
    assert.deepEqual(readdirSync(dir), [], 'nothing was created');
    const init = await baton(db, 'init');
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /database ready: .*baton\.db \(schema version \d+\)/);
    assert.equal(statSync(db).mode & 0o777, 0o600);
    assert.equal((await baton(db, 'task', 'add', 'k1')).code, 0);
    assert.equal((await baton(db, 'init')).code, 0, 'init again is harmless');
  });

  test('a file that is not a database is named so, not "unreachable"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-corrupt-'));
    const db = join(dir, 'baton.db');
    writeFileSync(db, 'these bytes are no SQLite database at all, just text\n'.repeat(200));
    const r = await baton(db, 'task', 'list');
    oneLine(r, 2, /is not a Baton database, or it is corrupt .* restore it from a backup/);
    assert.doesNotMatch(r.stderr, /unreachable|check the path/);
  });

  test('a directory named as the database is bad input (exit 2, one line), not unreachable, creating nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-dir-'));
    const said =
      /^baton: .*baton-dir-\w+ is a directory, not a database file — check --db \/ BATON_DB: name the/;
    for (const args of [
      ['status'],
      ['task', 'list'],
      ['init'],
      ['db', 'backup', join(mkdtempSync(join(tmpdir(), 'baton-out-')), 'x')],
    ]) {
      oneLine(await batonBare({}, '--db', dir, ...args), 2, said);
    }
    oneLine(await baton(dir, 'task', 'add', 'k1'), 2, said);
    const json = await batonBare({}, '--db', dir, 'task', 'list', '--json');
    assert.equal(json.code, 2, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { error: string }).error, 'invalid_input');
    assert.deepEqual(readdirSync(dir), [], 'nothing was created in it');
  });
});

for (const db of bothEngines()) {
  describe(`schema versions on ${db.name}`, () => {
    test('commands other than up, init and db migrate never migrate: an older schema is refused', async () => {
      const { url, known, previous } = await oneBehind(db);
      for (const args of [
        ['queue', 'list'],
        ['task', 'list'],
        ['task', 'add', 'k'],
      ]) {
        oneLine(
          await baton(url, ...args),
          3,
          new RegExp(
            `schema is at version ${previous}, older than this baton needs \\(${known}\\) — run \`baton db migrate\``,
          ),
        );
      }
      assert.equal(await appliedVersion(db, url), previous, 'nothing migrated');
      const migrated = await baton(url, 'db', 'migrate');
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.equal(await appliedVersion(db, url), known);
      assert.equal((await baton(url, 'queue', 'list')).code, 0);
    });

    test('a database without Baton tables is refused until baton init', async () => {
      const url = await db.empty();
      if (db.engine === 'postgres') {
        oneLine(await baton(url, 'task', 'list'), 4, /has no Baton tables/);
        const raw = await rawSql(db, url);
        const tables = await raw.exec(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
        await raw.close();
        assert.deepEqual(tables, [], 'no tables made');
      } else {
        assert.equal(existsSync(url), false);
      }
      assert.equal((await baton(url, 'init')).code, 0);
      assert.equal((await baton(url, 'task', 'list')).code, 0);
    });

    test('a running baton up stops with a clear error once the schema moves past what it knows', async () => {
      const c = await clusterFixture(db);
      try {
        const up = c.up('a');
        await up.waitRunning();
        const raw = await rawSql(db, c.url);
        try {
          const p = db.engine === 'sqlite' ? ['?', '?', '?'] : ['$1', '$2', '$3'];
          const at = db.engine === 'sqlite' ? 0 : new Date(0);
          await raw.exec(
            `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${p.join(', ')})`,
            [999, 'from-the-future', at],
          );
        } finally {
          await raw.close();
        }
        await waitUntil(() => up.child.exitCode !== null, 20_000, 'baton up to stop');
        assert.equal(up.child.exitCode, 3, up.log());
        assert.match(up.log(), /schema moved to version 999 while baton up ran, newer than this baton knows/);
      } finally {
        await c.close();
      }
    });
  });
}
