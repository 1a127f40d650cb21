/**
 * `baton doctor`, end to end on both engines: the built command in a directory of its own, on a
 * real database, with real facts made wrong (an old schema, a file that is no database, loose
 * modes, no ledger key, no leader, a silent host, a host without cgroups, an agent not on PATH,
 * a skewed clock, no git, the superuser's URL) and each seen as its warn or FAIL line with a fix.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import Database from 'better-sqlite3';
import { bothEngines, type TestDatabase } from '../support/databases.js';
import { repoRoot, type Run } from '../support/cli.js';
import { moveClockOf, SHARED_CLOCK_ENV } from '../support/clock.js';
import { smallDisk } from '../support/full-disk.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';

const root = repoRoot();
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Check {
  readonly id: string;
  readonly level: 'ok' | 'warn' | 'fail' | 'skip';
  readonly found: string;
  readonly fix: string | null;
}

const IDS = [
  'database',
  'schema',
  'clock',
  'ledger',
  'leader',
  'hosts',
  'agent-hosts',
  'fleet-containment',
  'keys',
  'github-outbox',
  'db-role',
  'agents',
  'containment',
  'git',
  'state',
  'disk',
];

function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-doctor-'));
  dirs.push(dir);
  return dir;
}

/** `baton <args>` run in `cwd`, with nothing of the caller's Baton environment. */
function baton(
  cwd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  as?: { uid: number; gid: number },
): Promise<Run> {
  const clean: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_LEDGER_KEY']) delete clean[name];
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(root, 'bin/baton.js'), ...args],
      { cwd, env: { ...clean, ...env }, ...as },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** `baton doctor --json` on `db` (`--api URL --token T` as two words of `extra`): exit code, each check by id. */
async function doctor(
  cwd: string,
  db: string | null,
  extra: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; checks: Map<string, Check>; ok: boolean }> {
  const target = db === null ? [] : ['--db', db];
  const run = await baton(cwd, [...target, 'doctor', '--json', ...extra], env);
  const parsed = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] };
  assert.deepEqual(
    parsed.checks.map((one) => one.id),
    IDS,
    'every check, each once, in order',
  );
  for (const one of parsed.checks) {
    // A warning or a failure says how to fix it; ok says nothing; a skip may say where to run it.
    if (one.level === 'ok') assert.equal(one.fix, null, one.id);
    if (one.level === 'warn' || one.level === 'fail') assert.ok((one.fix ?? '') !== '', `${one.id}: a fix`);
  }
  return { code: run.code, checks: new Map(parsed.checks.map((one) => [one.id, one])), ok: parsed.ok };
}

function at(checks: Map<string, Check>, id: string): Check {
  const found = checks.get(id);
  assert.ok(found !== undefined, `check ${id} is listed`);
  return found;
}

function expectLevel(checks: Map<string, Check>, id: string, level: Check['level'], words?: RegExp): void {
  const one = at(checks, id);
  assert.equal(one.level, level, `${id}: ${one.found} (fix: ${one.fix})`);
  if (words !== undefined) assert.match(`${one.found} fix: ${one.fix}`, words);
}

function open(db: TestDatabase, url: string, migrateTo?: number): Promise<Store> {
  if (migrateTo === undefined) return openStore(url, { intent: 'use' });
  return db.engine === 'sqlite'
    ? Promise.resolve(openSqliteStore({ path: url, migrateTo }))
    : openPostgresStore({ url, migrateTo });
}

async function withStore(
  db: TestDatabase,
  url: string,
  work: (store: Store) => Promise<void>,
): Promise<void> {
  const store = await open(db, url);
  try {
    await work(store);
  } finally {
    await store.close();
  }
}

/**
 * `work` run while, on PostgreSQL, another connection holds ledger_keys locked (ACCESS EXCLUSIVE):
 * the whole-database count GET /v1/status makes (observe.stats, which reads the ledger's window)
 * waits for it (the server answers 503 after its 5 s), what doctor reads over the API (/readyz,
 * /v1/leader, /v1/hosts, the token's lookup) must not. On SQLite, `work` alone.
 */
async function whileLedgerKeysLocked<T>(db: TestDatabase, url: string, work: () => Promise<T>): Promise<T> {
  if (db.engine !== 'postgres') return work();
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE ledger_keys IN ACCESS EXCLUSIVE MODE');
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'waited'>((done) => {
      timer = setTimeout(() => done('waited'), 30_000);
    });
    const result = await Promise.race([work(), waited]);
    clearTimeout(timer);
    assert.notEqual(result, 'waited', 'doctor over the API waited for a read of the ledger');
    return result as T;
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton doctor`, () => {
    test('a fresh database: exit 0, every check listed, text and --json alike', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      const { code, checks, ok } = await doctor(cwd, url);
      assert.equal(code, 0);
      assert.equal(ok, true);
      for (const id of [
        'database',
        'schema',
        'clock',
        'hosts',
        'agent-hosts',
        'fleet-containment',
        'keys',
        'github-outbox',
        'agents',
        'git',
        'state',
      ])
        expectLevel(checks, id, 'ok');
      expectLevel(checks, 'ledger', 'warn', /no ledger key registered.*baton ledger init/);
      expectLevel(checks, 'leader', 'warn', /no live leader.*start `baton up`/);
      const text = await baton(cwd, ['--db', url, 'doctor']);
      assert.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      const heads = lines.filter((line) => /^(ok|warn|FAIL|skip) /.test(line));
      const word = (level: Check['level']): string => (level === 'fail' ? 'FAIL' : level);
      assert.deepEqual(
        heads.map((line) => line.split(/\s+/).slice(0, 2)),
        IDS.map((id) => [word(at(checks, id).level), id]),
        'the text lists the same checks at the same levels as --json',
      );
      const all = [...checks.values()];
      const count = (level: Check['level']): number => all.filter((one) => one.level === level).length;
      assert.equal(lines.filter((line) => line.trimStart().startsWith('fix: ')).length, count('warn'));
      assert.equal(
        lines.at(-1),
        `doctor: ${count('ok')} ok, ${count('warn')} warn, 0 FAIL, 0 skipped: nothing failed`,
      );
    });

    test('the fleet and the ledger: a key, a leader, a silent host, a host without cgroups', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      const key = await baton(cwd, ['--db', url, 'ledger', 'init']);
      assert.equal(key.code, 0, key.stderr);
      await withStore(db, url, async (store) => {
        const leader = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: process.pid });
        assert.ok(
          (await store.leases.acquire({ name: 'dispatcher', holder: String(leader.id), ttlMs: 60_000 })).ok,
        );
        const quiet = await store.sessions.start({ kind: 'daemon', host: 'box-9', pid: 1, ttlMs: 50 });
        const capacity = { ramTotalMb: 8000, ramReservedMb: 500, ramFreeMb: 6000, slotsMax: 2 };
        await store.hosts.register({ name: 'box-1', session: leader.id, ...capacity });
        await store.hosts.register({ name: 'box-9', session: quiet.id, ...capacity });
        const ref = JSON.stringify({ run: 'abcdef012345', dirs: [] });
        const set = {
          name: 'box-1',
          session: leader.id,
          containment: 'process-group' as const,
          containmentRef: ref,
        };
        assert.ok(await store.hosts.setContainment(set));
      });
      await new Promise((done) => setTimeout(done, 200));
      const { code, checks } = await doctor(cwd, url);
      assert.equal(code, 0, 'warnings only');
      expectLevel(checks, 'ledger', 'ok', /1 key\(s\) registered, a key file is here/);
      expectLevel(checks, 'leader', 'ok', /box-1 leads, term 1/);
      expectLevel(checks, 'hosts', 'warn', /box-9 silent.*baton up --host box-9.*baton host disable box-9/);
      expectLevel(checks, 'fleet-containment', 'warn', /box-1 run agents without a cgroup/);
    });

    test('an agent command not on PATH, queued or given; one on PATH is fine', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      const queued = await baton(cwd, [
        '--db',
        url,
        'enqueue',
        'k1',
        '--command',
        'nosuch-agent-x7 -p {{key}}',
      ]);
      assert.equal(queued.code, 0, queued.stderr);
      const given = ['--agent-command', 'FOO=1 exec nosuch-agent-y8 "{{title}}"'];
      const { code, checks } = await doctor(cwd, url, given);
      assert.equal(code, 0);
      expectLevel(checks, 'agents', 'warn', /nosuch-agent-y8 \(--agent-command\); nosuch-agent-x7 \(job 1\)/);
      const fine = await doctor(workDir(), await db.fresh(), ['--agent-command', 'git -C . status {{key}}']);
      expectLevel(fine.checks, 'agents', 'ok', /on PATH: git/);
      // `~/bin/…` as the shell expands it, with HOME; and every simple command, not the first only.
      const home = workDir();
      mkdirSync(join(home, 'bin'));
      writeFileSync(join(home, 'bin', 'my-agent'), '#!/bin/sh\n', { mode: 0o755 });
      const tilde = ['--agent-command', 'cd {{worktree}} && ~/bin/my-agent {{key}}'];
      const mine = await doctor(workDir(), url, tilde, { HOME: home });
      expectLevel(
        mine.checks,
        'agents',
        'warn',
        /on PATH here: nosuch-agent-x7 \(job 1\): .*command not found/,
      );
      assert.doesNotMatch(at(mine.checks, 'agents').found, /my-agent/);
      const elsewhere = await doctor(workDir(), url, tilde, { HOME: workDir() });
      expectLevel(elsewhere.checks, 'agents', 'warn', /~\/bin\/my-agent \(--agent-command\)/);
    });

    test('.baton open to other users: warn, naming the paths, until tightened', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      mkdirSync(join(cwd, '.baton', 'logs'), { recursive: true, mode: 0o700 });
      writeFileSync(join(cwd, '.baton', 'logs', 'job-1-attempt-1.log'), 'out\n', { mode: 0o600 });
      expectLevel((await doctor(cwd, url)).checks, 'state', 'ok', /are private/);
      chmodSync(join(cwd, '.baton'), 0o777);
      chmodSync(join(cwd, '.baton', 'logs', 'job-1-attempt-1.log'), 0o644);
      const { code, checks } = await doctor(cwd, url);
      assert.equal(code, 0);
      expectLevel(
        checks,
        'state',
        'warn',
        /\.baton 0777 \(want 0700\), .*job-1-attempt-1\.log 0644 .*chmod each to the mode wanted/,
      );
      // As `baton up --agent-uids` leaves it: .baton 0711 is wanted, the fix names no 0700 for it.
      chmodSync(join(cwd, '.baton'), 0o711);
      const shared = at((await doctor(cwd, url)).checks, 'state');
      assert.doesNotMatch(`${shared.found} ${shared.fix}`, /\.baton 0711|chmod 700/);
      assert.match(`${shared.found} ${shared.fix}`, /job-1-attempt-1\.log 0644 .*stay 0711/);
      // Tightened as the fix says: ok again.
      chmodSync(join(cwd, '.baton'), 0o700);
      chmodSync(join(cwd, '.baton', 'logs', 'job-1-attempt-1.log'), 0o600);
      expectLevel((await doctor(cwd, url)).checks, 'state', 'ok', /are private/);
      chmodSync(join(cwd, '.baton'), 0o777);
      if (db.engine === 'sqlite') {
        // The database where `baton up` keeps it, named relative to the directory: listed once.
        chmodSync(join(cwd, '.baton', 'logs', 'job-1-attempt-1.log'), 0o600);
        copyFileSync(url, join(cwd, '.baton', 'baton.db'));
        chmodSync(join(cwd, '.baton', 'baton.db'), 0o644);
        const here = at((await doctor(cwd, '.baton/baton.db')).checks, 'state').found;
        assert.match(
          here,
          /^open to other users: \S+\.baton 0777 \(want 0700\), \S+\.baton\/baton\.db 0644 \(want 0600\):/,
        );
        assert.equal(here.match(/baton\.db 0644/g)?.length, 1, here);
      }
    });

    test('a database at an older schema, or a file that is none: FAIL with the fix, exit 7', async () => {
      const cwd = workDir();
      const old = await db.empty();
      await (await open(db, old, 28)).close();
      const { code, checks } = await doctor(cwd, old);
      assert.equal(code, 7);
      expectLevel(checks, 'schema', 'fail', /version 28, older than this baton needs.*baton db migrate/);
      expectLevel(checks, 'clock', 'skip', /see the schema check/);
      if (db.engine === 'sqlite') {
        const junk = join(workDir(), 'junk.db');
        writeFileSync(junk, 'not a database, just text '.repeat(200));
        const notOne = await doctor(cwd, junk);
        assert.equal(notOne.code, 7);
        expectLevel(notOne.checks, 'database', 'fail', /junk\.db/);
        // Someone else's SQLite database, in rollback mode: refused, its bytes untouched (no WAL).
        const theirs = join(workDir(), 'theirs.db');
        const raw = new Database(theirs);
        raw.pragma('journal_mode = DELETE');
        raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')");
        raw.close();
        const before = readFileSync(theirs);
        const foreign = await doctor(cwd, theirs);
        assert.equal(foreign.code, 7);
        expectLevel(foreign.checks, 'database', 'fail', /theirs\.db .*not a Baton database.*check --db/);
        assert.doesNotMatch(at(foreign.checks, 'database').fix ?? '', /baton init/);
        assert.deepEqual(readFileSync(theirs), before, 'not a byte changed');
        assert.equal(existsSync(`${theirs}-wal`), false, 'not put in WAL mode');
      } else {
        const closed = new URL(old);
        closed.port = '1';
        const unreachable = await doctor(cwd, closed.toString());
        assert.equal(unreachable.code, 5, 'an unreachable database keeps its exit code');
        expectLevel(unreachable.checks, 'database', 'fail', /connection refused/);
      }
    });

    test('a clock seconds away from the database: warn past 1 s, and past 5 s; SQLite cannot disagree', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      await moveClockOf(db, url, 3_000);
      const near = await doctor(cwd, url, [], SHARED_CLOCK_ENV);
      await moveClockOf(db, url, 5_000);
      const far = await doctor(cwd, url, [], SHARED_CLOCK_ENV);
      assert.equal(far.code, 0, 'a skew is a warning: claims and leases are on the database clock');
      if (db.engine === 'sqlite') {
        // The database's clock is this process's: ok, saying why (the shared test clock aside).
        for (const run of [near, far])
          expectLevel(run.checks, 'clock', 'ok', /SQLite: the database's clock is this machine's/);
        return;
      }
      expectLevel(near.checks, 'clock', 'warn', /behind the database's.*NTP/);
      expectLevel(far.checks, 'clock', 'warn', /not affected, but log-file times/);
    });

    test('a ledger row unsealed for over 10 min: warn, until `baton audit seal` seals it', async () => {
      const url = await db.fresh();
      const cwd = workDir();
      assert.equal((await baton(cwd, ['--db', url, 'ledger', 'init'])).code, 0);
      await moveClockOf(db, url, 11 * 60_000);
      const lagging = await doctor(cwd, url, [], SHARED_CLOCK_ENV);
      expectLevel(
        lagging.checks,
        'ledger',
        'warn',
        / 1 row unsealed, the oldest for 11 min: sealing lags.*audit seal/,
      );
      const seal = await baton(cwd, ['--db', url, 'audit', 'seal'], SHARED_CLOCK_ENV);
      assert.equal(seal.code, 0, seal.stderr);
      const sealed = await doctor(cwd, url, [], SHARED_CLOCK_ENV);
      expectLevel(sealed.checks, 'ledger', 'ok', /1 key\(s\) registered, a key file is here; no row waits/);
    });

    test('no git on PATH: FAIL naming the version to install', async () => {
      const { code, checks } = await doctor(workDir(), await db.fresh(), [], { PATH: '/nonexistent' });
      assert.equal(code, 7);
      expectLevel(checks, 'git', 'fail', /git is not on PATH.*install git 2\.25 or later/);
    });

    test(
      'little free disk where logs and worktrees go: warn under 1 GiB, FAIL under 100 MB',
      { skip: process.getuid?.() === 0 ? false : 'needs root, to mount a small tmpfs' },
      async (context) => {
        const url = await db.fresh();
        for (const [size, level, code] of [
          ['500m', 'warn', 0],
          ['50m', 'fail', 7],
        ] as const) {
          const cwd = smallDisk('baton-doctor-disk-', `size=${size}`);
          if (cwd === null) {
            context.skip('this process may not mount a tmpfs');
            return;
          }
          try {
            const { code: exit, checks } = await doctor(cwd, url);
            assert.equal(exit, code);
            expectLevel(checks, 'disk', level, /logs and worktrees at .*MB free of .*baton up --log-keep-mb/);
          } finally {
            execFileSync('umount', [cwd]);
            rmSync(cwd, { recursive: true, force: true });
          }
        }
      },
    );

    test("one read that fails is its own check's FAIL; the other checks still print; exit 7", async () => {
      const url = await db.fresh();
      // `.baton` a plain file: the state check cannot list it (ENOTDIR).
      const cwd = workDir();
      writeFileSync(join(cwd, '.baton'), 'not a directory\n');
      const file = await doctor(cwd, url);
      assert.equal(file.code, 7);
      expectLevel(file.checks, 'state', 'fail', /could not read \S+\.baton: ENOTDIR.*ls -ld \.baton/);
      expectLevel(file.checks, 'database', 'ok');
      // A `git` first on PATH that exits 1: the git check's FAIL, with git's own words.
      const bin = workDir();
      writeFileSync(join(bin, 'git'), '#!/bin/sh\necho "fatal: broken git" >&2\nexit 1\n', { mode: 0o755 });
      const broken = await doctor(workDir(), url, [], { PATH: `${bin}:${process.env['PATH'] ?? ''}` });
      assert.equal(broken.code, 7);
      expectLevel(broken.checks, 'git', 'fail', /could not run `git --version`: .*fatal: broken git/);
      expectLevel(broken.checks, 'schema', 'ok');
      if (db.engine === 'postgres') {
        // A role that may read schema_migrations and nothing else: each read it is refused is its check's FAIL.
        const role = `doctor_ro_${process.pid}`;
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        try {
          await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'ro'`);
          await admin.query(`GRANT SELECT ON schema_migrations TO ${role}`);
          const as = new URL(url);
          as.username = role;
          as.password = 'ro';
          const refused = await doctor(workDir(), as.toString());
          assert.equal(refused.code, 7);
          expectLevel(refused.checks, 'database', 'ok');
          expectLevel(refused.checks, 'schema', 'ok');
          for (const id of ['ledger', 'leader', 'hosts', 'agents'])
            expectLevel(refused.checks, id, 'fail', /permission denied for table .*baton db roles/);
        } finally {
          await admin.query(`DROP OWNED BY ${role}`);
          await admin.query(`DROP ROLE ${role}`);
          await admin.end();
        }
      }
    });

    test("the database role's power over the ledger", async () => {
      const { checks } = await doctor(workDir(), await db.fresh());
      if (db.engine === 'sqlite') expectLevel(checks, 'db-role', 'ok', /SQLite: no roles/);
      else expectLevel(checks, 'db-role', 'warn', /is a superuser.*baton db roles/);
      if (db.engine !== 'postgres') return;
      // `baton db roles`' runtime role: may append to the ledger, not change or erase it: ok.
      const url = await db.fresh();
      const suffix = `${process.pid}_${Date.now() % 100_000}`;
      const [owner, runtime] = [`do_${suffix}`, `dr_${suffix}`];
      const roles = await baton(workDir(), [
        '--db',
        url,
        'db',
        'roles',
        '--owner',
        owner,
        '--runtime',
        runtime,
      ]);
      assert.equal(roles.code, 0, roles.stderr);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`ALTER ROLE ${runtime} PASSWORD 'rt'`);
        const as = new URL(url);
        [as.username, as.password] = [runtime, 'rt'];
        const { code, checks: runtimeChecks } = await doctor(workDir(), as.toString());
        expectLevel(
          runtimeChecks,
          'db-role',
          'ok',
          new RegExp(`role ${runtime} may append to the ledger but not`),
        );
        expectLevel(runtimeChecks, 'ledger', 'warn', /no ledger key/);
        assert.equal(code, 0);
      } finally {
        // The roles stay, named per run, as test/e2e/roles.test.ts leaves its own.
        await admin.end();
      }
    });
  });

  test(`${db.name}: over the API, what the API answers; the ledger and the role skipped as local-only`, async () => {
    const url = await db.fresh();
    const cwd = workDir();
    const tokenOf = async (...scope: string[]): Promise<string> => {
      const made = await baton(cwd, ['--db', url, 'token', 'create', ...scope, '--name', 'doctor']);
      assert.equal(made.code, 0, made.stderr);
      return made.stdout.trim();
    };
    const viewer = await tokenOf('--scope', 'viewer');
    const host = await tokenOf('--scope', 'host', '--host', 'box-1');
    const server = spawn(process.execPath, [join(root, 'bin/baton.js'), 'serve', '--http', '127.0.0.1:0'], {
      cwd,
      env: { ...process.env, BATON_DB: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const api = await new Promise<string>((found, failed) => {
        let out = '';
        server.stdout.on('data', (data: Buffer) => {
          out += data.toString();
          const match = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match?.[1] !== undefined) found(match[1]);
        });
        server.on('exit', (code) => failed(new Error(`baton serve exited ${code}: ${out}`)));
      });
      // Once before the lock: the server's own start-up reads are done by then.
      assert.equal((await doctor(workDir(), null, ['--api', api, '--token', viewer])).code, 0);
      for (const token of [viewer, host]) {
        const { code, checks } = await whileLedgerKeysLocked(db, url, () =>
          doctor(workDir(), null, ['--api', api, '--token', token]),
        );
        assert.equal(code, 0, at(checks, 'database').found);
        expectLevel(checks, 'database', 'ok', /over the API/);
        expectLevel(checks, 'schema', 'ok', /at migration \d+/);
        expectLevel(checks, 'clock', 'ok', /round trip/);
        expectLevel(checks, 'leader', 'warn', /no live leader/);
        expectLevel(checks, 'hosts', 'ok');
        expectLevel(checks, 'ledger', 'skip', /\/metrics has the ledger's gauges.*observe\.stats.*--db/);
        expectLevel(checks, 'db-role', 'skip', /local-only/);
        expectLevel(checks, 'keys', 'skip', /local-only: the keys as stored/);
        expectLevel(checks, 'github-outbox', 'skip', /local-only/);
      }
      const refused = await doctor(workDir(), null, ['--api', api, '--token', 'baton_nosuchtoken']);
      assert.equal(refused.code, 6, 'a token the API refuses keeps its exit code');
      expectLevel(refused.checks, 'database', 'fail', /token/);
    } finally {
      server.kill('SIGTERM');
    }
  });

  test(
    `${db.name}: a .baton of someone else's (EACCES): the state check's FAIL, the others print, exit 7`,
    { skip: process.getuid?.() === 0 ? false : 'needs root, to run the command as user nobody' },
    async () => {
      const cwd = workDir();
      chmodSync(cwd, 0o755);
      mkdirSync(join(cwd, '.baton'), { mode: 0o700 });
      const run = await baton(
        cwd,
        ['--db', join(cwd, 'none.db'), 'doctor', '--json'],
        {},
        { uid: 65534, gid: 65534 },
      );
      assert.equal(run.code, 7, run.stderr);
      const checks = new Map(
        (JSON.parse(run.stdout) as { checks: Check[] }).checks.map((one) => [one.id, one]),
      );
      assert.deepEqual([...checks.keys()], IDS);
      expectLevel(checks, 'state', 'fail', /could not read \S+\.baton: EACCES/);
      expectLevel(checks, 'git', 'ok');
    },
  );

  const root0 = process.getuid?.() === 0;
  test(
    `${db.name}: a user who may write no cgroup: containment warns (agents would run without one)`,
    { skip: root0 ? false : 'needs root, to run the command as user nobody' },
    async () => {
      const cwd = workDir();
      chmodSync(cwd, 0o755);
      const run = await baton(
        cwd,
        ['--db', join(cwd, 'none.db'), 'doctor', '--json'],
        {},
        { uid: 65534, gid: 65534 },
      );
      const checks = new Map(
        (JSON.parse(run.stdout) as { checks: Check[] }).checks.map((one) => [one.id, one]),
      );
      expectLevel(checks, 'containment', 'warn', /no cgroup this user may write.*Delegate=yes/);
      const own = await doctor(cwd, await db.fresh());
      expectLevel(own.checks, 'containment', 'ok', /cgroup/);
    },
  );
}
