/**
 * `baton db backup FILE` (docs/decisions/0050-an-online-sqlite-backup.md) beside a real `baton up`
 * that runs a job and seals the ledger, while jobs go on being queued and finished: each backup
 * exits 0 with one line (size, ledger rows, schema version), is 0600, leaves no temporary file,
 * and opens as a database of its own whose ledger `baton audit verify` finds intact and sealed and
 * whose running job is there. Refusals are one line, their exit code, and write nothing.
 */
import { chmodSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, withCluster, type ClusterFixture } from './cluster-support.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'baton.js');
const LINE =
  /^backed up \S+ to (\S+): \d+\.\d MB, ledger (\d+) rows intact \((\d+) checkpoint\(s\)\), schema version (\d+), quick_check ok\n$/;

/** `baton` against another database (a backup), or as another user. */
function batonAt(
  cwd: string,
  args: readonly string[],
  ids: { uid?: number; gid?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, ...ids });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

async function sealedRows(c: ClusterFixture): Promise<number> {
  const verified = await c.baton('audit', 'verify', '--json');
  return (JSON.parse(verified.stdout) as { seals: number }).seals;
}

describe('baton db backup (sqlite)', () => {
  test('copies the database online beside a baton up that runs a job and seals, each copy checked', () =>
    withCluster(sqliteDatabase(), async (c) => {
      const key = join(c.dir, 'ledger.key');
      assert.equal((await c.baton('ledger', 'init', '--key-file', key)).code, 0);
      const up = c.up('h1', ...STEADY, '--slots', '4', '--ledger-key', key, '--seal-interval', '1s');
      assert.equal((await c.baton('enqueue', 'long', '--command', 'sleep 60')).code, 0);
      await up.waitRunning();
      await waitUntil(async () => (await sealedRows(c)) > 0, 20_000, 'the sealer to seal');
      // Writes go on while the backups run: jobs queued, run and finished, the sealer sealing.
      let writing = true;
      const writer = (async () => {
        for (let n = 0; writing; n += 1) await c.store.jobs.enqueue({ key: `w-${n}`, command: 'true' });
      })();
      const dir = mkdtempSync(join(tmpdir(), 'baton-backup-'));
      try {
        for (const name of ['one.db', 'two.db', 'three.db']) {
          const file = join(dir, name);
          const made = await c.baton('db', 'backup', file);
          assert.equal(made.code, 0, made.stderr);
          assert.equal(made.stderr, '');
          const [, named, rows, seals, version] = LINE.exec(made.stdout) ?? [];
          assert.equal(named, file, made.stdout);
          assert.ok(Number(rows) > 0 && Number(seals) > 0, made.stdout);
          assert.equal(Number(version), (await c.store.schema()).applied);
          assert.equal(statSync(file).mode & 0o777, 0o600);
          const verified = await batonAt(dir, ['--db', file, 'audit', 'verify', '--json']);
          assert.equal(verified.code, 0, verified.stderr);
          const report = JSON.parse(verified.stdout) as { ok: boolean; rows: number; seals: number };
          assert.deepEqual([report.ok, report.rows, report.seals], [true, Number(rows), Number(seals)]);
          const shown = await batonAt(dir, ['--db', file, 'queue', 'list', '--json']);
          const jobs = JSON.parse(shown.stdout) as { key: string; status: string }[];
          assert.equal(jobs.find((job) => job.key === 'long')?.status, 'running', shown.stdout);
        }
        writing = false;
        await writer;
        assert.ok((await c.store.jobs.list({})).length > 3, 'jobs were queued during the backups');
        // No temporary copy left; each backup one file (not in WAL mode: no -wal or -shm of its own).
        const left = readdirSync(dir).filter((name) => !/^(one|two|three)\.db(-wal|-shm)?$/.test(name));
        assert.deepEqual(left, []);
      } finally {
        writing = false;
        await writer;
      }
    }));

  test('refuses, in one line and writing nothing: an existing FILE (--force replaces it), PostgreSQL, an unwritable directory', () =>
    withCluster(sqliteDatabase(), async (c) => {
      const dir = mkdtempSync(join(tmpdir(), 'baton-backup-'));
      const file = join(dir, 'kept.db');
      writeFileSync(file, 'mine');
      const exists = await c.baton('db', 'backup', file);
      assert.deepEqual([exists.code, exists.stdout], [3, '']);
      assert.match(exists.stderr, /^baton: \S+kept\.db exists; nothing was written — .*--force/);
      assert.equal(exists.stderr.split('\n').length, 2);
      assert.equal(readFileSync(file, 'utf8'), 'mine');
      const forced = await c.baton('db', 'backup', file, '--force');
      assert.equal(forced.code, 0, forced.stderr);
      // Nothing sealed yet: nothing of the ledger was verified, and the line does not call it intact.
      assert.match(
        forced.stdout,
        /, ledger \d+ rows? not sealed \(no checkpoint, so nothing was verified; `baton audit verify` says how to seal it\), schema version \d+, quick_check ok\n$/,
      );
      const onPg = await batonAt(dir, ['--db', 'postgres://baton@127.0.0.1:1/none', 'db', 'backup', 'pg.db']);
      assert.deepEqual([onPg.code, onPg.stdout], [2, '']);
      assert.match(onPg.stderr, /^baton: baton db backup copies a SQLite database; .* pg_dump .*\n$/);
      const notDir = await c.baton('db', 'backup', join(file, 'x.db'));
      assert.equal(notDir.code, 2, notDir.stderr);
      assert.match(notDir.stderr, /^baton: cannot write a backup in \S+ \(ENOTDIR\); nothing was written — /);
      assert.deepEqual(readdirSync(dir).sort(), ['kept.db']);
    }));

  test('names no FILE for a copy whose ledger is not intact (exit 1, one line, nothing left) unless asked to keep it', () =>
    withCluster(sqliteDatabase(), async (c) => {
      const key = join(c.dir, 'ledger.key');
      assert.equal((await c.baton('ledger', 'init', '--key-file', key)).code, 0);
      for (const name of ['a', 'b'])
        assert.equal((await c.baton('enqueue', name, '--command', 'true')).code, 0);
      assert.equal((await c.baton('audit', 'seal', '--key-file', key)).code, 0);
      const before = mkdtempSync(join(tmpdir(), 'baton-backup-'));
      const intact = await c.baton('--json', 'db', 'backup', join(before, 'intact.db'));
      const shown = JSON.parse(intact.stdout) as { ledgerIntact: boolean; ledgerProblems: number };
      assert.deepEqual([intact.code, shown.ledgerIntact, shown.ledgerProblems], [0, true, 0]);
      // Someone with the file rewrites a sealed row, past the append-only trigger.
      const raw = new Database(c.url);
      raw.exec('DROP TRIGGER audit_events_no_update');
      raw.exec(`UPDATE audit_events SET detail = '{"by":"nobody"}' WHERE id = 2`);
      raw.close();
      const dir = mkdtempSync(join(tmpdir(), 'baton-backup-'));
      const run = await c.baton('db', 'backup', join(dir, 'b.db'));
      assert.deepEqual([run.code, run.stdout], [1, '']);
      assert.match(
        run.stderr,
        /^baton: the copy's ledger is NOT intact \(1 problem\(s\)\); \S+ was not written: /,
      );
      assert.match(run.stderr, /or pass --keep-damaged-ledger to keep the copy as it is\n$/);
      assert.equal(run.stderr.split('\n').length, 2);
      assert.deepEqual(readdirSync(dir), []);

      // Asked to keep the evidence: the copy is named, 0600, and says what is wrong with it.
      const file = join(dir, 'kept.db');
      const kept = await c.baton('db', 'backup', file, '--keep-damaged-ledger');
      assert.deepEqual([kept.code, kept.stderr], [0, '']);
      assert.match(
        kept.stdout,
        /^backed up \S+ to \S+kept\.db: \d+\.\d MB, ledger \d+ rows NOT intact, 1 problem\(s\) \(`baton --db \S+kept\.db audit verify` lists them\) \(1 checkpoint\(s\)\), schema version \d+, quick_check ok\n$/,
      );
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.deepEqual(readdirSync(dir), ['kept.db']);
      const again = await batonAt(dir, ['--db', file, 'audit', 'verify']);
      assert.equal(again.code, 1, 'the copy holds the damage as it was');
      assert.match(again.stdout + again.stderr, /NOT intact/);
      const json = await c.baton('--json', 'db', 'backup', file, '--force', '--keep-damaged-ledger');
      assert.equal(json.code, 0);
      const report = JSON.parse(json.stdout) as { ledgerIntact: boolean; ledgerProblems: number };
      assert.deepEqual([report.ledgerIntact, report.ledgerProblems], [false, 1]);
    }));

  test(
    'refuses a directory the user may not write (EACCES), writing nothing',
    { skip: process.getuid?.() === 0 ? false : 'needs root, to run the command as user nobody' },
    () =>
      withCluster(sqliteDatabase(), async (c) => {
        const dir = mkdtempSync(join(tmpdir(), 'baton-backup-'));
        chmodSync(dir, 0o755);
        const run = await batonAt(dir, ['--db', c.url, 'db', 'backup', join(dir, 'b.db')], {
          uid: 65534,
          gid: 65534,
        });
        assert.deepEqual([run.code, run.stdout], [2, '']);
        assert.match(run.stderr, /^baton: cannot write a backup in \S+ \(EACCES\); nothing was written — /);
        assert.deepEqual(readdirSync(dir), []);
      }),
  );
});
