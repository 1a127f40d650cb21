/**
 * End-to-end tests of what a fresh-eyes walk through Baton found: host names with spaces, a
 * dead standby counted as a ready one. Real databases, the real `baton` command.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openStore } from '../store/open.js';
import { baton, localOnly, repoRoot, stopServers, type Run } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

/** `baton up ...args` on `db`, stopped after 20 s: an up that starts instead of refusing runs until stopped. */
function up(db: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  for (const name of ['BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  const bin = join(repoRoot(), 'bin', 'baton.js');
  return new Promise((done) => {
    execFile(process.execPath, [bin, 'up', ...args], { env, timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

/** `baton up ...args` on `db` until its output matches `until` (then SIGTERM), or it exits: its output. */
function upUntil(db: string, until: RegExp, ...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  for (const name of ['BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  // In a folder of its own: its .baton/ (logs, a ledger key file) is none of the checkout's.
  const cwd = mkdtempSync(join(tmpdir(), 'baton-fresh-eyes-'));
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), 'up', ...args], { env, cwd });
  let out = '';
  const seen = (data: Buffer): void => {
    out += data.toString();
    if (until.test(out)) child.kill('SIGTERM');
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  const stop = setTimeout(() => child.kill('SIGTERM'), 20_000);
  return new Promise((done) =>
    child.on('close', () => {
      clearTimeout(stop);
      done(out);
    }),
  );
}

/** Registers host `name` for a daemon session of its own, disabled or not; ends that session when `down`. */
async function hostOf(
  db: string,
  name: string,
  enabled: boolean,
  down: boolean,
  budgetMb = 8_000,
): Promise<void> {
  const store = await openStore(db, { intent: 'use' });
  try {
    const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1, ttlMs: 3_600_000 });
    await store.hosts.register({
      name,
      session: session.id,
      enabled,
      ramTotalMb: budgetMb,
      ramReservedMb: 512,
      ramFreeMb: 20_000,
      slotsMax: 2,
    });
    if (down) await store.sessions.end(session.id);
  } finally {
    await store.close();
  }
}

describeCli('baton after a fresh-eyes walk', ({ setup, mode }) => {
  test(
    'baton up refuses a host name with a space: one line, exit 2, nothing started',
    {
      skip: localOnly(mode, 'baton up runs against the database'),
    },
    async () => {
      const t = await setup();
      const before = await t.counts();
      const line = assertOneErrorLine(await up(t.db, '--host', 'bad name', '--no-http'), 2, 'up');
      assert.match(line, /^baton: --host "bad name" contains a space — give a host name without spaces/);
      assert.deepEqual(await t.counts(), before, 'no session started, nothing written');
    },
  );

  test('status counts only a live disabled host as warm standby; hosts quotes a name in its advice', async () => {
    const t = await setup();
    await hostOf(t.db, 'spare', false, false);
    await hostOf(t.db, 'dead-spare', false, true);
    await hostOf(t.db, 'old box', true, true);
    const status = await t.run('status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /^hosts +0 live, 1 down, 1 in warm standby, 1 disabled and not serving; 0\/0 slots busy$/m,
    );
    const hosts = await t.run('hosts');
    assert.equal(hosts.code, 0, hosts.stderr);
    assert.match(hosts.stdout, /start `baton up --host 'old box'` on that machine/);
    assert.match(hosts.stdout, /^spare +standby /m, 'a live disabled host is a standby');
    assert.match(hosts.stdout, /^dead-spare +disabled /m, 'a down one is only disabled');
  });

  test(
    'baton up takes a duration wherever it takes a time, a bare number still seconds',
    {
      skip: localOnly(mode, 'baton up runs against the database'),
    },
    async () => {
      const t = await setup();
      const flags = ['--host', 'box-1', '--no-http', '--lease-ttl', '3s', '--heartbeat-interval', '500ms'];
      const said = await upUntil(
        t.db,
        /joined as session/,
        ...flags,
        '--stale-after',
        '2s',
        '--retry-interval',
        '1',
        '--log-keep-days',
        '12h',
      );
      assert.match(said, /baton up on box-1: lease TTL 3000 ms, heartbeat 500 ms/);
      assert.match(said, /joined as session \d+ on host box-1/);
    },
  );

  test(
    'baton up refuses --slots 0, a --ram-mb not above the reserve, an unreadable time, an open bind: exit 2, no file',
    {
      skip: localOnly(mode, 'baton up runs against the database'),
    },
    async () => {
      const t = await setup();
      // On SQLite a path with no file yet, which a refused baton up must not make.
      const sqlite = !t.db.startsWith('postgres');
      const never = sqlite ? join(dirname(t.db), 'never.db') : t.db;
      for (const [args, message] of [
        [
          ['--slots', '0'],
          /^baton: --slots 0 leaves the host no slot for any job — give 1 or more; .*--standby$/,
        ],
        [
          ['--ram-mb', '10'],
          /^baton: --ram-mb 10 is not above --reserved-mb 512: no job could ever be given RAM/,
        ],
        [['--ram-mb', '1000', '--reserved-mb', '1000'], /--ram-mb 1000 is not above --reserved-mb 1000/],
        [
          ['--reserved-mb', '1048576'],
          /^baton: --reserved-mb 1048576 is not below this machine's RAM \(\d+ MB\): no job could ever be given RAM/,
        ],
        [
          ['--stale-after', '2 weeks'],
          /^baton: --stale-after must be a duration such as 8h, 90m or 30s, got "2 weeks"/,
        ],
      ] as const) {
        const run = await up(never, '--host', 'box-1', '--no-http', ...args);
        assert.match(assertOneErrorLine(run, 2, args.join(' ')), message);
        if (sqlite) assert.equal(existsSync(never), false, `no database file made for ${args.join(' ')}`);
      }
      // A bind beyond loopback with reads open is refused before the store opens too.
      const open = await up(never, '--host', 'box-1', '--http', '0.0.0.0:0');
      assert.match(
        assertOneErrorLine(open, 2, '--http 0.0.0.0:0'),
        /^baton: refusing to serve on 0\.0\.0\.0, which is not loopback, with reads open to anyone — add --auth/,
      );
      if (sqlite) assert.equal(existsSync(never), false, 'no database file made for --http 0.0.0.0:0');
    },
  );

  test('baton hosts labels a RAM budget below the free RAM so the two do not contradict', async () => {
    const t = await setup();
    await hostOf(t.db, 'small', true, false, 4_000);
    const hosts = await t.run('hosts');
    assert.equal(hosts.code, 0, hosts.stderr);
    const [header, row] = hosts.stdout.split('\n').map((line) => line.trim().split(/\s+/));
    const cell = (name: string): string | undefined => row?.[header?.indexOf(name) ?? -1];
    // The budget (--ram-mb) is 4000 MB; the machine has 20000 free; placement offers 4000 - 512.
    assert.deepEqual(
      ['RAM_BUDGET', 'RESERVED', 'MACHINE_FREE', 'AVAILABLE'].map(cell),
      ['4000', '512', '20000', '3488'],
      hosts.stdout,
    );
  });

  test(
    'a recovery that rescued no session says so instead of "rescued sessions []"',
    {
      skip: localOnly(mode, 'baton up runs against the database'),
    },
    async () => {
      const t = await setup();
      const s = await t.session('--ttl', '1h');
      await t.json(0, 'enqueue', 'pulled', '--command', 'true');
      const { jobs } = await t.json<{ jobs: { id: number }[] }>(
        0,
        'job',
        'next',
        '--session',
        s,
        '--batch',
        '1',
        '--lease',
        '1s',
      );
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      // Its session lives on (1 h TTL); its lease passed: the leader takes the job back.
      const said = await upUntil(t.db, /requeued \[/, '--host', 'box-1', '--no-http');
      const took = 'took back jobs whose session had already ended or whose lease passed';
      const id = String(jobs[0]?.id);
      assert.ok(said.includes(`${took} (no session rescued): requeued [${id}], failed []`), said);
      assert.doesNotMatch(said, /rescued sessions \[\]/);
    },
  );

  test(
    'the note on BATON_DB without its password comes only when agents get BATON_DB (--no-http)',
    {
      skip: localOnly(mode, 'baton up runs against the database'),
    },
    async (c) => {
      const t = await setup();
      if (!/^postgres(ql)?:\/\/[^/]*:[^/]*@/.test(t.db)) return c.skip('a PostgreSQL URL with a password');
      const note = /note: agents get BATON_DB without its password/;
      const served = await upUntil(t.db, /serving the API/, '--host', 'box-1', '--http', '127.0.0.1:0');
      assert.match(served, /joined as session/);
      assert.doesNotMatch(served, note, 'agents get BATON_URL only');
      const direct = await upUntil(t.db, /joined as session/, '--host', 'box-2', '--no-http');
      assert.match(direct, note);
    },
  );

  test('a PostgreSQL database that does not exist is not found: exit 4, as a missing SQLite file', async (c) => {
    const t = await setup();
    if (!t.db.startsWith('postgres')) return c.skip('PostgreSQL only: SQLite has its own test');
    const url = new URL(t.db);
    url.pathname = '/baton_no_such_db';
    for (const args of [['queue', 'list'], ['init']]) {
      if (mode === 'api' && args[0] === 'init') continue;
      const run = await baton(url.toString(), ...args);
      const line = assertOneErrorLine(run, 4, args.join(' '));
      assert.match(
        line,
        /^baton: database baton_no_such_db on PostgreSQL at \S+ not found — create it \(createdb baton_no_such_db\)/,
      );
    }
    const refused = await baton(url.toString(), 'queue', 'list', '--json');
    assert.equal((JSON.parse(refused.stdout) as { error: string }).error, 'not_found');
  });

  test(
    'audit verify on a ledger with no checkpoint says nothing was verified and how to seal (exit 0)',
    {
      skip: localOnly(mode, 'audit verify reads the ledger tables'),
    },
    async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const run = await t.run('audit', 'verify');
      assert.equal(run.code, 0, run.stderr);
      assert.match(
        run.stdout,
        /^ledger not sealed: 1 row and no checkpoint, so nothing was verified — to seal it, run `baton ledger init`/,
      );
      assert.doesNotMatch(run.stdout, /intact/);
    },
  );

  test(
    'a leader with no key file, the database having a key, says which key and where its file goes',
    {
      skip: localOnly(mode, 'baton ledger init and baton up run against the database'),
    },
    async () => {
      const t = await setup();
      const keyFile = join(mkdtempSync(join(tmpdir(), 'baton-box-1-')), 'ledger.key');
      const init = await t.run('ledger', 'init', '--key-file', keyFile);
      assert.equal(init.code, 0, init.stderr);
      const key = (await t.json<{ keys: { id: string }[] }>(0, 'ledger', 'key')).keys[0]?.id ?? '?';
      const said = await upUntil(t.db, /joined as session/, '--host', 'box-2', '--no-http');
      assert.match(
        said,
        new RegExp(
          `not sealing the ledger: the database has key ${key} registered and this host has no key file ` +
            '\\(/\\S+/\\.baton/ledger\\.key\\); copy that file from the host where `baton ledger init` ran',
        ),
      );
    },
  );

  test('queue list stopped at its limit says how many more jobs match and how to see them', async () => {
    const t = await setup();
    for (const key of ['a', 'b', 'c']) await t.json(0, 'enqueue', key);
    const more = /^showing 2 of 3 jobs: narrow the list with --status or --key, or page through them all/m;
    for (const args of [
      ['--limit', '2'],
      ['--limit', '2', '--status', 'queued,running'],
    ]) {
      const cut = await t.run('queue', 'list', ...args);
      assert.equal(cut.code, 0, cut.stderr);
      assert.match(cut.stdout, more, args.join(' '));
    }
    const whole = await t.run('queue', 'list');
    assert.doesNotMatch(whole.stdout, /^showing/m, 'all of them shown: no line');
    const done = await t.run('queue', 'list', '--limit', '2', '--status', 'done');
    assert.doesNotMatch(done.stdout, /^showing/m, 'none done');
  });

  test('cancel takes several job ids: each its own cancel, a line each, the highest exit code', async () => {
    const t = await setup();
    const ids: string[] = [];
    for (const key of ['a', 'b', 'c', 'd'])
      ids.push(String((await t.json<{ job: { id: number } }>(0, 'enqueue', key)).job.id));
    const [a, b, c, d] = ids;
    const bad = await t.run('cancel', d ?? '', 'abc');
    assert.equal(bad.code, 2, 'a bad id is bad input, checked before any cancel');
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^baton: job id must be a whole number, got "abc"/);
    assert.equal((await t.json<{ status: string }[]>(0, 'queue', 'list', '--key', 'd'))[0]?.status, 'queued');
    const both = await t.run('cancel', a ?? '', b ?? '');
    assert.equal(both.code, 0, both.stderr);
    assert.deepEqual(both.stdout.trim().split('\n'), [`cancelled job ${a} (a)`, `cancelled job ${b} (b)`]);
    const mixed = await t.run('cancel', c ?? '', a ?? '', '999999');
    assert.equal(mixed.code, 4, `the worst: not found (4) over already cancelled (3): ${mixed.stderr}`);
    assert.equal(mixed.stdout, `cancelled job ${c} (c)\n`);
    const errors = mixed.stderr.trim().split('\n');
    assert.equal(errors.length, 2, mixed.stderr);
    assert.match(errors[0] ?? '', new RegExp(`^baton: job ${a} is already cancelled`));
    assert.match(errors[1] ?? '', /^baton: job 999999 not found/);
    const json = await t.run('cancel', d ?? '', b ?? '', '--json');
    assert.equal(json.code, 3, json.stderr);
    const rows = JSON.parse(json.stdout) as { id: unknown; ok: boolean }[];
    assert.deepEqual(
      rows.map((row) => [row.id, row.ok]),
      [
        [Number(d), true],
        [Number(b), false],
      ],
    );
  });

  test('retry --ram-mb queues the ended job under a new RAM budget (0: none); a bad one changes nothing', async () => {
    const t = await setup();
    type Queued = { created: boolean; job: { id: number; ramMb: number | null } };
    const { job } = await t.json<Queued>(0, 'enqueue', 'k', '--ram-mb', '64');
    await t.json(0, 'cancel', String(job.id));
    for (const bad of ['-1', 'lots', '1.5']) {
      const refused = await t.run('retry', String(job.id), '--ram-mb', bad);
      assert.match(assertOneErrorLine(refused, 2, `--ram-mb ${bad}`), /^baton: --ram-mb must be/);
    }
    assert.equal((await t.json<unknown[]>(0, 'queue', 'list')).length, 1, 'nothing queued by the refusals');
    const more = await t.json<Queued>(0, 'retry', String(job.id), '--ram-mb', '256');
    assert.equal(more.job.ramMb, 256);
    const again = await t.run('retry', String(job.id), '--ram-mb', '512');
    assert.equal(again.code, 0, again.stderr);
    assert.equal(
      again.stdout,
      `job ${more.job.id} for k is already queued with RAM budget 256 MB; --ram-mb not applied: ` +
        `baton cancel ${more.job.id}, then baton retry ${more.job.id} --ram-mb 512\n`,
    );
    await t.json(0, 'cancel', String(more.job.id));
    const none = await t.run('retry', String(more.job.id), '--ram-mb', '0');
    assert.match(none.stdout, /^queued job \d+ for k \(retry of job \d+, no RAM budget\)\n$/, none.stderr);
    const plain = await t.json<Queued>(0, 'queue', 'list', '--status', 'queued');
    assert.deepEqual(
      (plain as unknown as Queued['job'][]).map((j) => j.ramMb),
      [null],
    );
  });
});
