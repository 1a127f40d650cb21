/**
 * `baton db copy` refuses (docs/decisions/0049): bad flags (exit 2); work in flight, a ledger that
 * does not verify or is not sealed, a target holding rows (exit 3); each with one line, and neither
 * the SQLite file nor the PostgreSQL database changed. A fault mid-copy rolls the whole copy back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { baton, type Run } from '../../test/support/cli.js';
import {
  postgresDatabase,
  postgresServers,
  refusedUrls,
  sqliteDatabase,
} from '../../test/support/databases.js';
import { assertOneErrorLine } from '../../test/support/cli-suite.js';
import { pgRows, targetRows } from '../../test/support/copy-target.js';

type Obj = Record<string, unknown>;

const server = (): ReturnType<typeof postgresDatabase> => {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  return postgresDatabase(first);
};

async function ok(db: string, ...args: string[]): Promise<Run> {
  const run = await baton(db, ...args);
  assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
  return run;
}

/** A small sealed backlog: two tasks (one a GitHub issue), a queued job; its key file. */
async function givenSealed(): Promise<{ src: string; keyFile: string }> {
  const src = await sqliteDatabase().fresh();
  const keyFile = join(mkdtempSync(join(tmpdir(), 'baton-copy-key-')), 'ledger.key');
  await ok(src, 'task', 'add', 'a1', '--title', 'first');
  await ok(src, 'enqueue', 'github:acme/api#9', '--command', 'true');
  await ok(src, 'ledger', 'init', '--key-file', keyFile);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  return { src, keyFile };
}

/** Every row of every table of the SQLite file (its bytes move with WAL checkpoints): a refusal changes none. */
function contentOf(path: string): Obj {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .pluck()
      .all();
    return Object.fromEntries(
      (tables as string[]).map((table) => [table, db.prepare(`SELECT * FROM "${table}"`).all()]),
    );
  } finally {
    db.close();
  }
}

test('refuses bad flags with exit 2, before it reads anything', async () => {
  const { src } = await givenSealed();
  const to = await server().empty();
  assertOneErrorLine(await baton(src, 'db', 'copy'), 2, 'no --to');
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', '/tmp/other.db'), 2, 'a file');
  assert.match(line, /--to must be a PostgreSQL URL/);
  const fromPg = assertOneErrorLine(await baton(to, 'db', 'copy', '--to', to), 2, '--db on PostgreSQL');
  assert.match(fromPg, /--db must name the SQLite file/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
});

test('a target database that does not exist is exit 4, a refused login 5, each with its fix', async () => {
  const { src } = await givenSealed();
  const { missing, wrongPassword } = await refusedUrls(await server().empty());
  const before = contentOf(src);
  const gone = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', missing), 4, 'no such database');
  const name = new URL(missing).pathname.slice(1);
  assert.match(
    gone,
    new RegExp(`database ${name} on PostgreSQL at \\S+ not found — create it \\(createdb ${name}\\)`),
  );
  if (wrongPassword !== null) {
    const run = await baton(src, 'db', 'copy', '--to', wrongPassword);
    const refused = assertOneErrorLine(run, 5, 'a wrong password');
    assert.match(
      refused,
      /cannot use PostgreSQL at \S+: password authentication failed .* — check the user and password/,
    );
    assert.match(refused, /PGPASSWORD/);
    assert.doesNotMatch(refused, /not-the-password/);
  }
  assert.deepEqual(contentOf(src), before, 'the file unchanged');
});

test('refuses a backlog with work in flight, changing nothing; drained, it copies', async () => {
  const { src, keyFile } = await givenSealed();
  const to = await server().empty();
  const s = (await ok(src, 'session', 'start')).stdout.trim();
  const taken = JSON.parse((await ok(src, 'job', 'next', '--session', s, '--json')).stdout) as { id: number };
  await ok(src, 'claim', 'a1', '--session', s);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  const before = contentOf(src);
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', to), 3, 'busy');
  assert.match(
    line,
    new RegExp(`session ${s} \\(agent on .*\\) is live; job ${taken.id} is claimed or running`),
  );
  assert.match(line, /a1 is claimed/);
  assert.match(line, /baton session end <id>/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
  assert.deepEqual(contentOf(src), before);
  await ok(src, 'session', 'end', s);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  await ok(src, 'db', 'copy', '--to', to);
  assert.equal((await targetRows(to))['tasks'], 2);
});

test('refuses a ledger with rows no checkpoint covers; sealed, it copies', async () => {
  const { src, keyFile } = await givenSealed();
  const to = await server().empty();
  await ok(src, 'task', 'add', 'late');
  const before = contentOf(src);
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', to), 3, 'unsealed');
  assert.match(line, /1 ledger rows of .* are not sealed .*baton audit seal --db/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
  assert.deepEqual(contentOf(src), before);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  await ok(src, 'db', 'copy', '--to', to, '--dry-run');
});

test('refuses a source whose ledger was tampered with', async () => {
  const { src } = await givenSealed();
  const to = await server().empty();
  const db = new Database(src);
  db.exec('DROP TRIGGER audit_events_no_update');
  db.prepare(`UPDATE audit_events SET detail = '{"by":"mallory"}' WHERE id = 1`).run();
  db.close();
  const before = contentOf(src);
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', to), 3, 'tampered');
  assert.match(line, /the ledger of .* does not verify \(1 problems; first: row 1 edited\)/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
  assert.deepEqual(contentOf(src), before);
});

test('refuses a target that holds rows, and leaves them as they were', async () => {
  const { src } = await givenSealed();
  const to = await server().fresh();
  await ok(to, 'task', 'add', 'theirs');
  const before = await targetRows(to);
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', to), 3, 'not empty');
  assert.match(line, /is not empty \(rows: tasks 1, audit_events 1\)/);
  assert.doesNotMatch(line, /postgres:\/\/postgres:postgres@/, 'the password is not printed');
  assert.deepEqual(await targetRows(to), before);
});

test('a fault mid-copy rolls everything back: the target stays empty', async () => {
  const { src } = await givenSealed();
  const to = await server().fresh();
  await pgRows(
    to,
    `CREATE FUNCTION refuse_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'no jobs here'; END $$;
     CREATE TRIGGER refuse_jobs BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_jobs()`,
  );
  const empty = await targetRows(to);
  const line = assertOneErrorLine(await baton(src, 'db', 'copy', '--to', to), 1, 'fault');
  assert.match(line, /the copy failed and was rolled back, the target holds no rows of it: no jobs here/);
  assert.deepEqual(await targetRows(to), empty);
  assert.equal(empty['tasks'], 0);
  await pgRows(to, 'DROP TRIGGER refuse_jobs ON jobs');
  await ok(src, 'db', 'copy', '--to', to);
  const source = new Database(src, { readonly: true });
  const outbox = source.prepare('SELECT count(*) FROM github_outbox').pluck().get();
  source.close();
  assert.deepEqual(await targetRows(to), {
    tasks: 2,
    jobs: 1,
    sessions: 0,
    audit: 5,
    effects: 0,
    keys: 1,
    outbox,
  });
});

test('--dry-run prints each table and changes nothing', async () => {
  const { src } = await givenSealed();
  const to = await server().empty();
  const run = await ok(src, 'db', 'copy', '--to', to, '--dry-run', '--json');
  const shown = JSON.parse(run.stdout) as { dryRun: boolean; tables: Obj; notCopied: Obj };
  assert.equal(shown.dryRun, true);
  assert.deepEqual([shown.tables['tasks'], shown.tables['jobs'], shown.tables['ledger_keys']], [2, 1, 1]);
  assert.ok(typeof shown.notCopied['audit_checkpoints'] === 'string');
  const plain = await ok(src, 'db', 'copy', '--to', to, '--dry-run');
  assert.match(plain.stdout, /^dry run: would copy .* \(after creating its tables\):\n {2}workspaces +0\n/);
  assert.match(plain.stdout, /\n {2}tasks +2\n/);
  assert.match(plain.stdout, /nothing changed\n$/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
});

test('refuses a file another connection is writing (its write lock held), changing nothing', async () => {
  const { src } = await givenSealed();
  const to = await server().empty();
  const before = contentOf(src);
  // A writer mid-transaction, as a `baton serve` (which opens no session) would be.
  const writer = new Database(src);
  writer.exec('BEGIN IMMEDIATE');
  let run: Run;
  try {
    run = await baton(src, 'db', 'copy', '--to', to);
  } finally {
    writer.exec('ROLLBACK');
    writer.close();
  }
  const line = assertOneErrorLine(run, 3, 'locked');
  assert.match(line, /is being written .*the copy needs its write lock/);
  assert.deepEqual(await targetRows(to), { tables: 0 });
  assert.deepEqual(contentOf(src), before);
  await ok(src, 'db', 'copy', '--to', to);
});

test('a role that may not create tables in schema public (PostgreSQL 15): exit 6, dry run and copy', async () => {
  const { src } = await givenSealed();
  const to = await server().empty();
  const role = `copy_owner_${process.pid}`;
  const admin = new pg.Client({ connectionString: to });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'ow'`);
    // As on PostgreSQL 15 and later for any role but public's owner (older servers granted it to all).
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    const as = new URL(to);
    as.username = role;
    as.password = 'ow';
    const before = contentOf(src);
    for (const dry of [['--dry-run'], []]) {
      const run = await baton(src, 'db', 'copy', '--to', as.toString(), ...dry);
      const line = assertOneErrorLine(run, 6, `copy ${dry.join(' ')} as a role without CREATE`);
      assert.match(line, new RegExp(`role ${role} may not create tables in schema public`));
      assert.match(
        line,
        new RegExp(`ALTER SCHEMA public OWNER TO ${role} \\(or GRANT CREATE ON SCHEMA public TO ${role}\\)`),
      );
    }
    assert.deepEqual(contentOf(src), before, 'the file is not marked moved');
    assert.deepEqual(await targetRows(to), { tables: 0 });
    await admin.query(`GRANT CREATE ON SCHEMA public TO ${role}`);
    await ok(src, 'db', 'copy', '--to', as.toString(), '--dry-run');
  } finally {
    await admin.query(`DROP OWNED BY ${role}`);
    await admin.query(`DROP ROLE ${role}`);
    await admin.end();
  }
});
