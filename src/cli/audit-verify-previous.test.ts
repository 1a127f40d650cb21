/**
 * `baton audit verify --previous OLD.jsonl` (docs/decisions/0049, session 21): a ledger moved by
 * `baton db copy` is checked against the old ledger's export. Real SQLite file, real PostgreSQL, the
 * real `baton`: an untouched move passes from the database and from an export (where PostgreSQL's
 * times are text, SQLite's milliseconds); an edited, a re-timed and a deleted copied row, an old export from another
 * ledger and an edited old export are each named, exit 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { baton, type Run } from '../../test/support/cli.js';
import { postgresDatabase, postgresServers, sqliteDatabase } from '../../test/support/databases.js';
import { pgRows } from '../../test/support/copy-target.js';

type Obj = Record<string, unknown>;

async function ok(db: string, ...args: string[]): Promise<Run> {
  const run = await baton(db, ...args);
  assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stdout}${run.stderr}`);
  return run;
}

const dir = mkdtempSync(join(tmpdir(), 'baton-previous-'));

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** A sealed SQLite backlog with rows of several shapes, exported, then copied into a fresh database. */
async function moved(name: string): Promise<{ src: string; to: string; old: string; rows: number }> {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  const src = await sqliteDatabase().fresh();
  const to = await postgresDatabase(first).empty();
  await ok(src, 'task', 'add', `${name}-1`, '--title', 'first', '--label', 'b', '--label', 'a');
  await ok(src, 'task', 'add', `${name}-2`, '--title', 'ünïcode "quoted"', '--priority', '7');
  await ok(src, 'enqueue', `${name}-1`, '--command', 'true');
  await ok(src, 'ledger', 'init', '--key-file', join(dir, `${name}.key`));
  await ok(src, 'audit', 'seal', '--key-file', join(dir, `${name}.key`));
  await ok(src, 'db', 'copy', '--to', to);
  const exported = await ok(src, 'audit', 'export', '--format', 'jsonl');
  const rows = exported.stdout.split('\n').filter((line) => line.startsWith('{"record":"row"')).length;
  return { src, to, old: write(`${name}-old.jsonl`, exported.stdout), rows };
}

/** Runs a statement past the ledger's append-only triggers (superuser), as an attacker with the owner's rights. */
async function tamper(url: string, sql: string): Promise<void> {
  await pgRows(url, `DO $$ BEGIN SET LOCAL session_replication_role = replica; ${sql}; END $$`);
}

test('an untouched move verifies against the old export, from the database and from an export', async () => {
  const { to, old, rows } = await moved('clean');
  assert.ok(rows >= 4, `the old ledger has rows of several kinds (${rows})`);
  const run = await ok(to, 'audit', 'verify', '--previous', old);
  assert.match(
    run.stdout,
    new RegExp(
      `previous ledger: verifies \\(with its own keys\\), .*its ${rows} rows are rows here, unchanged`,
    ),
  );
  const json = JSON.parse((await ok(to, 'audit', 'verify', '--previous', old, '--json')).stdout) as {
    previous: { ok: boolean; rows: number; checkpoint: { seq: number } };
  };
  assert.equal(json.previous.ok, true);
  assert.equal(json.previous.rows, rows);
  assert.equal(json.previous.checkpoint.seq, 1);
  const exported = await ok(to, 'audit', 'export', '--format', 'jsonl');
  assert.match(
    exported.stdout,
    /"at":"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+00"/,
    'PostgreSQL prints its time text',
  );
  const offline = await ok(
    to,
    'audit',
    'verify',
    '--file',
    write('clean-new.jsonl', exported.stdout),
    '--previous',
    old,
  );
  assert.match(offline.stdout, /previous ledger: verifies/);
});

test('edited, re-timed and deleted copied rows are each named; exit 1', async () => {
  const { to, old } = await moved('tampered');
  await tamper(to, `UPDATE audit_events SET detail = jsonb_set(detail, '{by}', '"mallory"') WHERE id = 1`);
  await tamper(to, `UPDATE audit_events SET at = at + interval '1 microsecond' WHERE id = 2`);
  await tamper(to, 'DELETE FROM audit_events WHERE id = 3');
  // A jsonb string holding the old JSON text: the same text, another value (detail->>'by' is null).
  await tamper(to, `UPDATE audit_events SET detail = to_jsonb(detail::text) WHERE id = 4`);
  const run = await baton(to, 'audit', 'verify', '--previous', old);
  assert.equal(run.code, 1, `${run.stdout}${run.stderr}`);
  assert.match(run.stdout, /previous ledger NOT continued intact: 4 problems/);
  assert.match(run.stdout, /row 4 edited: detail differ/);
  const json = JSON.parse((await baton(to, 'audit', 'verify', '--previous', old, '--json')).stdout) as Obj;
  assert.equal(json['ok'], false, 'the answer as a whole fails, as the exit code does');
  assert.match(run.stdout, /row 1 edited: detail differ/);
  assert.match(run.stdout, /row 2 edited: at differ/);
  assert.match(run.stdout, /row 3 missing: a row of the old ledger this ledger does not hold/);
});

test("another ledger's export, or an edited old export, is refused; exit 1", async () => {
  const one = await moved('one');
  const two = await moved('two');
  const foreign = await baton(one.to, 'audit', 'verify', '--previous', two.old);
  assert.equal(foreign.code, 1, `${foreign.stdout}${foreign.stderr}`);
  assert.match(
    foreign.stdout,
    /link: the link names checkpoint 1 \(hash [0-9a-f]{64}\), but the old ledger's last is 1/,
  );
  const exported = (await ok(one.src, 'audit', 'export', '--format', 'jsonl')).stdout;
  const edited = exported.replace(/(priority\\":)(\d+)/, '$1999');
  assert.notEqual(edited, exported, 'the old export was edited');
  const run = await baton(one.to, 'audit', 'verify', '--previous', write('edited-old.jsonl', edited));
  assert.equal(run.code, 1, `${run.stdout}${run.stderr}`);
  assert.match(
    run.stdout,
    /ledger previous: the old ledger does not verify: 1 problems \(first: row \d+ edited\)/,
  );
  assert.match(run.stdout, /edited: detail differ/, 'and the forged row differs from the copied one');
});

test('old rows pruned here since are not compared; a bad --previous file is refused before the verify', async () => {
  const first = postgresServers()[0];
  if (first === undefined) throw new Error('no PostgreSQL server (BATON_TEST_PG_SERVERS)');
  const src = await sqliteDatabase().fresh();
  const to = await postgresDatabase(first).empty();
  const keyFile = join(dir, 'pruned.key');
  // 8,300 rows of 2020, more than one PostgreSQL checkpoint holds (8,192), then today's.
  const db = new Database(src);
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8300)
           INSERT INTO audit_events (at, type, detail) SELECT 1577836800000 + i, 'task:added', '{"by":"seed"}' FROM n`);
  db.close();
  await ok(src, 'task', 'add', 'pruned-1');
  await ok(src, 'ledger', 'init', '--key-file', keyFile);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  await ok(src, 'db', 'copy', '--to', to);
  const old = join(dir, 'pruned-old.jsonl');
  await ok(src, 'audit', 'export', '--format', 'jsonl', '--out', old);
  await ok(to, 'audit', 'seal', '--key-file', keyFile);
  const pruned = await ok(to, 'audit', 'prune', '--before', '2021-01-01', '--key-file', keyFile);
  assert.match(pruned.stdout, /pruned 8192 rows/);
  const run = await ok(to, 'audit', 'verify', '--previous', old);
  assert.match(
    run.stdout,
    /its 8302 rows are rows here, unchanged; 8192 of them pruned here since, not compared/,
  );
  for (const [file, words] of [
    [join(dir, 'no-such.jsonl'), /--previous .*no-such\.jsonl cannot be read: it does not exist/],
    [
      write('not-an-export.jsonl', '{"hello": 1}\n'),
      /--previous .*not-an-export\.jsonl is not a ledger export/,
    ],
  ] as const) {
    const refused = await baton(to, 'audit', 'verify', '--previous', file);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, words);
    assert.equal(refused.stdout, '', 'refused before the verify printed anything');
  }
});
