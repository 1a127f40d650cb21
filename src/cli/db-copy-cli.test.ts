/**
 * `baton db copy` (docs/decisions/0049): a SQLite backlog with every kind of state moved into a real
 * PostgreSQL database, read back through the real `baton` on both and compared; each refusal
 * leaving both sides as they were; a fault mid-copy leaving the target empty; the ledger link.
 */
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore } from '../store/open.js';
import { baton, repoRoot, type Run } from '../../test/support/cli.js';
import { postgresDatabase, postgresServers, sqliteDatabase } from '../../test/support/databases.js';
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

async function json<T = Obj>(db: string, ...args: string[]): Promise<T> {
  return JSON.parse((await ok(db, ...args, '--json')).stdout) as T;
}

/** A sealed SQLite backlog with tasks in every state, jobs, claims, effects, tokens, a host and a lease. */
async function givenBacklog(): Promise<{ src: string; keyFile: string; keys: string[]; jobs: number[] }> {
  const src = await sqliteDatabase().fresh();
  const keyFile = join(mkdtempSync(join(tmpdir(), 'baton-copy-key-')), 'ledger.key');
  const add = (key: string, ...flags: string[]): Promise<Run> => ok(src, 'task', 'add', key, ...flags);
  await add('open1', '--title', 'One', '--priority', '5', '--label', 'a', '--label', 'b', '--body', 'why');
  await add('rev', '--review', 'required');
  for (const key of ['esc', 'gated', 'done1', 'closed1', 'github:acme/api#7']) await add(key);
  await add('dep', '--after', 'open1');
  await ok(src, 'gate', 'gated', 'design');
  await ok(src, 'close', 'closed1', '--reason', 'not needed');
  await ok(src, 'close', 'done1', '--done');
  await ok(src, 'workspace', 'add', 'ws', '--path', tmpdir());
  await ok(src, 'setting', 'set', 'vague-words', '0');
  const s = (await ok(src, 'session', 'start')).stdout.trim();
  const jobs: number[] = [];
  for (const [key, status] of [
    ['rev', 'done'],
    ['esc', 'failed'],
  ] as const) {
    await ok(src, 'enqueue', key, '--command', 'true');
    const taken = await json<{ id: number; epoch: number }>(src, 'job', 'next', '--session', s);
    jobs.push(taken.id);
    await ok(
      src,
      'job',
      'finish',
      String(taken.id),
      '--session',
      s,
      '--epoch',
      String(taken.epoch),
      '--status',
      status,
      ...(status === 'failed' ? ['--reason', 'boom'] : []),
    );
  }
  const epoch = String((await json<{ epoch: number }>(src, 'claim', 'esc', '--session', s)).epoch);
  await ok(src, 'effect', 'esc', '--session', s, '--epoch', epoch, '--kind', 'note', '--payload', '{"a":1}');
  // A JSON null payload: copied as JSON null, not SQL NULL (review fix 2).
  await ok(src, 'effect', 'esc', '--session', s, '--epoch', epoch, '--kind', 'note', '--payload', 'null');
  await ok(src, 'escalate', 'esc', '--session', s, '--epoch', epoch, '--reason', 'help');
  jobs.push((await json<{ job: { id: number } }>(src, 'enqueue', 'open1', '--command', 'echo hi')).job.id);
  await ok(src, 'session', 'end', s);
  await ok(src, 'token', 'create', '--scope', 'operator', '--name', 'ops');
  const viewer = await json<{ id: string }>(src, 'token', 'create', '--scope', 'viewer');
  await ok(src, 'token', 'revoke', viewer.id);
  await givenHostAndLease(src);
  await ok(src, 'ledger', 'init', '--key-file', keyFile);
  await ok(src, 'audit', 'seal', '--key-file', keyFile);
  const keys = ['open1', 'rev', 'esc', 'gated', 'done1', 'closed1', 'github:acme/api#7', 'dep'];
  return { src, keyFile, keys, jobs };
}

/** A host its runner registered and a dispatcher term it resigned, both over: as a stopped `baton up` leaves them. */
async function givenHostAndLease(src: string): Promise<void> {
  const store = await openStore(src);
  try {
    const session = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
    const host = {
      name: 'box-1',
      session: session.id,
      ramTotalMb: 16_000,
      ramReservedMb: 0,
      ramFreeMb: 9_000,
    };
    await store.hosts.register({ ...host, slotsMax: 2 });
    const lease = await store.leases.acquire({ name: 'dispatcher', holder: 'box-1', ttlMs: 60_000 });
    assert.ok(lease.ok);
    await store.leases.resign({ name: 'dispatcher', holder: 'box-1', term: lease.lease.term });
    await store.sessions.end(session.id);
  } finally {
    await store.close();
  }
}

/** What a user reads through the CLI, on either engine. */
async function reads(db: string, keys: readonly string[], jobs: readonly number[]): Promise<Obj> {
  const out: Obj = {};
  const each = [
    ['task', 'list'],
    ['queue', 'list'],
    ['session', 'list'],
    ['token', 'list'],
    ['escalations'],
    ['effects', 'esc'],
    ['workspace', 'list'],
    ['setting', 'list'],
    ['hosts'],
    ...keys.map((key) => ['task', 'show', key]),
    ...jobs.map((id) => ['job', 'show', String(id)]),
  ];
  for (const args of each) out[args.join(' ')] = await json(db, ...args);
  // How long ago a host last reported is read against now: the two reads are apart in time.
  for (const host of out['hosts'] as Obj[]) delete host['lastReportAgeMs'];
  return out;
}

test('copies a backlog with every kind of state; the CLI reads the same on PostgreSQL', async () => {
  const { src, keyFile, keys, jobs } = await givenBacklog();
  const to = await server().empty();
  // A number past 2^53, exactly as the file holds it (the CLI would round it as it reads --payload).
  const file = new Database(src);
  file.exec(`INSERT INTO effects (task_id, session_id, epoch, kind, payload, recorded_at)
    SELECT task_id, session_id, epoch, kind, '{"n":12345678901234567890}', recorded_at FROM effects LIMIT 1`);
  file.close();
  const before = await reads(src, keys, jobs);
  const oldAudit = await json<Obj[]>(src, 'audit', '--limit', '1000');
  const sessions = await json<{ id: number }[]>(src, 'session', 'list');
  const copied = await json<{ tables: Obj; linkId: number }>(src, 'db', 'copy', '--to', to);
  assert.equal(copied.tables['tasks'], keys.length);
  assert.deepEqual(await reads(to, keys, jobs), before);
  await assertOldFileRefuses(src);
  const payloads = await pgRows(to, 'SELECT payload::text AS p FROM effects ORDER BY id');
  assert.deepEqual(
    payloads.map((row) => row['p']),
    ['{"a": 1}', 'null', '{"n": 12345678901234567890}'],
  );
  const newAudit = await json<Obj[]>(to, 'audit', '--limit', '1000');
  assert.deepEqual(newAudit.slice(0, oldAudit.length), oldAudit, 'the old rows, same ids, same content');
  assert.equal(newAudit.length, oldAudit.length + 1);
  assert.equal(newAudit.at(-1)?.['type'], 'ledger:continued');
  assert.equal(newAudit.at(-1)?.['id'], copied.linkId);
  // The outbox is the source's own, not the rows the target's triggers wrote for the copied tasks.
  const outbox = new Database(src, { readonly: true })
    .prepare('SELECT count(*) AS n FROM github_outbox')
    .get();
  assert.equal((await targetRows(to))['outbox'], (outbox as { n: number }).n);
  // Ids go on past the copied ones.
  const next = await json<{ job: { id: number } }>(to, 'enqueue', 'new1', '--command', 'true');
  assert.equal(next.job.id, Math.max(...jobs) + 1);
  const fresh = Number((await ok(to, 'session', 'start')).stdout.trim());
  assert.equal(fresh, Math.max(...sessions.map((row) => row.id)) + 1);
  await assertLinkVerifies(src, to, keyFile, copied.linkId);
  await assertTamperedLinkReported(to, copied.linkId);
});

/** An export whose link row's detail was edited into no JSON: verify reports that row, it does not crash. */
async function assertTamperedLinkReported(to: string, linkId: number): Promise<void> {
  const lines = (await ok(to, 'audit', 'export', '--format', 'jsonl')).stdout.trim().split('\n');
  const edited = lines.map((line) => {
    const record = JSON.parse(line) as { record: string; row?: Obj };
    if (record.record !== 'row' || record.row?.['id'] !== linkId) return line;
    return JSON.stringify({ ...record, row: { ...record.row, detail: '{"from": edited' } });
  });
  assert.notDeepEqual(edited, lines, 'the link row was found and edited');
  const file = join(mkdtempSync(join(tmpdir(), 'baton-copy-tampered-')), 'new.jsonl');
  writeFileSync(file, `${edited.join('\n')}\n`);
  const run = await baton(to, 'audit', 'verify', '--file', file);
  assert.equal(run.code, 1, `${run.stdout}${run.stderr}`);
  assert.match(`${run.stdout}${run.stderr}`, new RegExp(`row ${linkId}\\b.*edited`));
}

/** Counts of the rows a use of the old file would change, read directly. */
function fileRows(src: string): Obj {
  const db = new Database(src, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT (SELECT count(*) FROM tasks) AS tasks, (SELECT count(*) FROM jobs) AS jobs,
                (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM audit_events) AS audit,
                (SELECT count(*) FROM hosts) AS hosts, (SELECT max(epoch) FROM tasks) AS epoch`,
      )
      .get() as Obj;
  } finally {
    db.close();
  }
}

/** `baton up` or `baton serve`, sent SIGTERM after 20 s if it did not refuse (it then drains and exits 0). */
function runner(src: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: src };
  delete env['BATON_DEBUG'];
  return new Promise((done) => {
    const bin = join(repoRoot(), 'bin/baton.js');
    execFile(process.execPath, [bin, ...args], { env, timeout: 20_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** After the copy the file is evidence only: every use that writes refuses (exit 3), reads for evidence work. */
async function assertOldFileRefuses(src: string): Promise<void> {
  const rows = fileRows(src);
  const uses = [
    await baton(src, 'task', 'add', 'after-move'),
    await baton(src, 'enqueue', 'after-move-job', '--command', 'true'),
    await baton(src, 'task', 'list'),
    await baton(src, 'db', 'migrate'),
    await runner(src, 'up', '--no-http', '--host', 'old-host'),
    await runner(src, 'serve', '--http', '127.0.0.1:0'),
  ];
  const codes = uses.map((run) => run.code);
  assert.deepEqual(
    codes,
    [3, 3, 3, 3, 3, 3],
    `exit 3 on the moved file: ${uses.map((run) => run.stderr).join('')}`,
  );
  for (const run of uses) {
    assert.match(run.stderr, /was moved by baton db copy \(moved to postgres:\/\/.* at \d{4}-/);
    assert.match(run.stderr, /--db <postgres url>/);
    assert.doesNotMatch(run.stderr, /postgres:postgres@/, 'no password in the mark');
  }
  assert.deepEqual(fileRows(src), rows, 'nothing changed in the file');
  const again = await baton(src, 'db', 'copy', '--to', await server().empty());
  assert.equal(again.code, 3, `a second copy of the moved file: ${again.stderr}`);
  assert.equal((await baton(src, 'audit', 'verify')).code, 0);
  const backup = join(mkdtempSync(join(tmpdir(), 'baton-copy-backup-')), 'old.db');
  await ok(src, 'db', 'backup', backup);
}

/** The new ledger names the old one's last checkpoint, seals with the same key, and verify says so. */
async function assertLinkVerifies(src: string, to: string, keyFile: string, linkId: number): Promise<void> {
  const last = new Database(src, { readonly: true })
    .prepare(
      'SELECT seq, hash, last_id AS lastId, key_id AS keyId FROM audit_checkpoints ORDER BY seq DESC LIMIT 1',
    )
    .get() as Obj;
  await ok(to, 'audit', 'seal', '--key-file', keyFile);
  const report = await json<{ ok: boolean; seals: number; continues: { id: number; checkpoint: Obj } }>(
    to,
    'audit',
    'verify',
  );
  assert.equal(report.ok, true);
  assert.ok(report.seals >= 1);
  assert.equal(report.continues.id, linkId);
  assert.deepEqual(
    { seq: report.continues.checkpoint['seq'], hash: report.continues.checkpoint['hash'] },
    { seq: last['seq'], hash: last['hash'] },
  );
  assert.equal(report.continues.checkpoint['lastId'], last['lastId']);
  assert.equal(report.continues.checkpoint['keyId'], last['keyId']);
  const plain = await ok(to, 'audit', 'verify');
  assert.match(
    plain.stdout,
    new RegExp(`continues \\(row #${linkId}\\) the ledger of .*checkpoint ${String(last['seq'])} `),
  );
  // The file's own export still verifies as the old ledger's evidence.
  const exported = join(mkdtempSync(join(tmpdir(), 'baton-copy-export-')), 'old.jsonl');
  const file = await ok(src, 'audit', 'export', '--format', 'jsonl');
  writeFileSync(exported, file.stdout);
  const old = await json<{ ok: boolean; sealedThrough: number }>(src, 'audit', 'verify', '--file', exported);
  assert.equal(old.ok, true);
  assert.equal(old.sealedThrough, last['lastId']);
  assert.ok(readFileSync(exported, 'utf8').includes(String(last['hash'])));
}
