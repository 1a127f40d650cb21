/**
 * End-to-end tests of the `baton` command: each case spawns the compiled CLI (bin/baton.js)
 * against a fresh database of its own, on SQLite and, when the test runner provides servers, on
 * PostgreSQL. They pin the contract scripts rely on: exit codes, one-line errors, JSON shapes.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { baton, repoRoot, type Run } from '../../test/support/cli.js';
import {
  bothEngines,
  postgresDatabase,
  sqliteDatabase,
  type TestDatabase,
} from '../../test/support/databases.js';

type Obj = Record<string, unknown>;

const root = repoRoot();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UNREACHABLE_PG = 'postgres://127.0.0.1:1/nope';
const postgresEngineBuilt = existsSync(join(root, 'dist/src/store/postgres/postgres-store.js'));

/** Asserts the exit code and that stderr is exactly one `baton: ` line without a stack. */
function assertOneErrorLine(run: Run, code: number, what: string): string {
  assert.equal(run.code, code, `${what}: exit ${run.code}, stderr ${run.stderr}`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `${what}: stderr was ${JSON.stringify(run.stderr)}`);
  assert.match(lines[0] ?? '', /^baton: /);
  return lines[0] ?? '';
}

/** One fresh database and the CLI calls a test makes against it. */
function bundle(db: string) {
  const run = (...args: string[]): Promise<Run> => baton(db, ...args);
  /** Runs with --json, asserts the exit code and returns the parsed stdout. */
  const json = async <T = Obj>(code: number, ...args: string[]): Promise<T> => {
    const result = await run(...args, '--json');
    assert.equal(result.code, code, `baton ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  /** Starts a session and returns its id as printed: the plain stdout is just the id. */
  const session = async (...args: string[]): Promise<string> => {
    const result = await run('session', 'start', ...args);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\d+\n$/);
    return result.stdout.trim();
  };
  const claim = async (key: string, s: string): Promise<string> =>
    String((await json<{ epoch: number }>(0, 'claim', key, '--session', s)).epoch);
  const count = async (...args: string[]): Promise<number> => (await json<[]>(0, ...args)).length;
  /** Row counts as seen through the CLI itself. */
  const counts = async (): Promise<Obj> => ({
    audit: await count('audit'),
    tasks: await count('task', 'list'),
    sessions: await count('session', 'list'),
    jobs: await count('queue', 'list'),
  });
  return { db, run, json, session, claim, count, counts };
}

function engines(): readonly TestDatabase[] {
  if (process.env['BATON_TEST_PG_SERVERS']) return bothEngines();
  const url = process.env['BATON_TEST_PG_URL'];
  if (!url) return [sqliteDatabase()];
  return [sqliteDatabase(), postgresDatabase({ name: 'postgres (BATON_TEST_PG_URL)', url })];
}

for (const engine of engines()) {
  describe(`baton CLI on ${engine.name}`, { concurrency: 4 }, () => {
    const made: string[] = [];
    const fresh = async (): Promise<string> => {
      const url = await engine.fresh();
      made.push(url);
      return url;
    };
    const setup = async (): Promise<ReturnType<typeof bundle>> => bundle(await fresh());
    // The SQLite files live in temp directories of their own; PostgreSQL's throwaway server goes
    // away with its data, and CI's server is new for every run.
    after(() => {
      if (engine.engine !== 'sqlite') return;
      for (const path of made) rmSync(dirname(path), { recursive: true, force: true });
    });

    test('adds a task and shows it as JSON with ISO times, its holder and its jobs', async () => {
      const t = await setup();
      const key = 'github:acme/api#1246';
      const added = await t.json(
        0,
        'task',
        'add',
        key,
        '--title',
        'Fix login',
        '--priority',
        '7',
        '--project',
        'api',
        '--assignee',
        'ada',
        '--label',
        'bug',
        '--label',
        'auth',
      );
      assert.equal(added['key'], key);
      assert.equal(added['priority'], 7);
      assert.deepEqual(added['labels'], ['auth', 'bug']);
      assert.match(String(added['createdAt']), ISO);
      const s = await t.session('--host', 'build-3');
      const epoch = await t.claim(key, s);
      await t.json(0, 'enqueue', key);
      const shown = await t.json<{ task: Obj; holder: Obj; jobs: [] }>(0, 'task', 'show', key);
      assert.equal(shown.task['key'], key);
      const { since, ...holder } = shown.holder;
      assert.deepEqual(holder, { session: Number(s), host: 'build-3', epoch: Number(epoch) });
      assert.match(String(since), ISO);
      assert.equal(shown.jobs.length, 1);
      const plain = await t.run('task', 'show', key);
      assert.match(plain.stdout, new RegExp(`claimed by session ${s} on build-3 since `));
      assert.equal(await t.count('task', 'list', '--project', 'api'), 1);
      assert.equal(await t.count('task', 'list', '--project', 'web'), 0);
    });

    test('starts a session and prints only its id, or the session object with --json', async () => {
      const t = await setup();
      await t.session();
      const started = await t.json(0, 'session', 'start', '--kind', 'human', '--host', 'h1', '--name', 'ada');
      assert.equal(started['kind'], 'human');
      assert.equal(started['host'], 'h1');
      assert.equal(started['name'], 'ada');
      assert.equal(started['state'], 'live');
      // The CLI exits at once, so the session's pid is its caller's: here, this test process.
      assert.equal(started['pid'], process.pid);
      assert.match(String(started['startedAt']), ISO);
      assert.equal((await t.json(0, 'session', 'start', '--pid', '4242'))['pid'], 4242);
    });

    test('grants a claim with its epoch, and the same epoch when the same session claims again', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const s = await t.session();
      const first = await t.run('claim', 'k1', '--session', s);
      assert.equal(first.code, 0);
      assert.equal(first.stdout, `claimed k1 epoch 1 (session ${s})\n`);
      const again = await t.json(0, 'claim', 'k1', '--session', s);
      assert.equal(again['key'], 'k1');
      assert.equal(again['session'], Number(s));
      assert.equal(again['epoch'], 1);
      assert.equal(again['granted'], false);
      assert.match(String(again['claimedAt']), ISO);
    });

    test('refuses a claim held by another session with exit 3, naming session, host and since', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const holder = await t.session('--host', 'build-7');
      const other = await t.session('--host', 'laptop');
      const granted = await t.json(0, 'claim', 'k1', '--session', holder);
      assert.equal(granted['granted'], true);
      const line = assertOneErrorLine(await t.run('claim', 'k1', '--session', other), 3, 'held');
      assert.match(line, new RegExp(`session ${holder} on build-7 since \\d{4}-\\d\\d-\\d\\dT`));
      const refused = await t.json<{ holder: Obj } & Obj>(3, 'claim', 'k1', '--session', other);
      assert.equal(refused['error'], 'held');
      assert.equal(typeof refused['message'], 'string');
      assert.deepEqual(refused.holder, {
        session: Number(holder),
        host: 'build-7',
        since: granted['claimedAt'],
        epoch: 1,
      });
    });

    test('exits 3 from a heartbeat once its claim was released and re-claimed by another session', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const a = await t.session();
      const b = await t.session('--host', 'other-host');
      const epoch = await t.claim('k1', a);
      const beat = ['heartbeat', a, '--key', 'k1', '--epoch', epoch];
      assert.equal((await t.run(...beat)).code, 0);
      assert.equal((await t.run('heartbeat', a)).code, 0);
      assert.equal((await t.run('release', 'k1', '--session', a, '--epoch', epoch)).code, 0);
      const newEpoch = await t.claim('k1', b);
      assert.equal(Number(newEpoch), Number(epoch) + 1);
      const line = assertOneErrorLine(await t.run(...beat), 3, 'fenced heartbeat');
      assert.match(line, new RegExp(`now held by session ${b} on other-host`));
      const fenced = await t.json<{ current: Obj } & Obj>(3, ...beat);
      assert.equal(fenced['error'], 'fenced');
      assert.deepEqual([fenced.current['session'], fenced.current['epoch']], [Number(b), Number(newEpoch)]);
    });

    test('refuses a release with an old epoch with exit 3 and keeps the current claim', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const a = await t.session();
      const b = await t.session();
      const old = await t.claim('k1', a);
      await t.json(0, 'release', 'k1', '--session', a, '--epoch', old, '--outcome', 'failed');
      const current = await t.claim('k1', b);
      const stale = await t.run('release', 'k1', '--session', a, '--epoch', old);
      assertOneErrorLine(stale, 3, 'stale release');
      const shown = await t.json<{ holder: Obj }>(0, 'task', 'show', 'k1');
      assert.deepEqual([shown.holder['session'], shown.holder['epoch']], [Number(b), Number(current)]);
      const released = await t.json(
        0,
        'release',
        'k1',
        '--session',
        b,
        '--epoch',
        current,
        '--outcome',
        'done',
      );
      const expected = { key: 'k1', session: Number(b), epoch: Number(current), outcome: 'done' };
      assert.deepEqual(released, expected);
    });

    test('ends a session, releasing its claims, and refuses it further claims with exit 3', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      const s = await t.session();
      await t.claim('k1', s);
      const ended = await t.json(0, 'session', 'end', s);
      assert.equal(ended['state'], 'ended');
      assert.equal(ended['ended'], true);
      assert.equal((await t.json(0, 'task', 'show', 'k1'))['holder'], null);
      assertOneErrorLine(await t.run('claim', 'k1', '--session', s), 3, 'claim by ended session');
    });

    test('exits 4 for an unknown task, session or job', async () => {
      const t = await setup();
      const s = await t.session();
      await t.json(0, 'task', 'add', 'k1');
      const cases: string[][] = [
        ['task', 'show', 'nope'],
        ['claim', 'nope', '--session', s],
        ['claim', 'k1', '--session', '999'],
        ['heartbeat', '999'],
        ['session', 'end', '999'],
        ['job', 'show', '999'],
        ['cancel', '999'],
      ];
      for (const args of cases) assertOneErrorLine(await t.run(...args), 4, args.join(' '));
      assert.equal((await t.json(4, 'task', 'show', 'nope'))['error'], 'not_found');
    });

    test('exits 2 for bad input and bad usage with one line, and writes nothing', async () => {
      const t = await setup();
      const s = await t.session();
      await t.json(0, 'task', 'add', 'k1');
      const before = await t.counts();
      const negative = await t.run('task', 'add', 'k2', '--priority', '-1');
      const line = assertOneErrorLine(negative, 2, 'negative priority');
      assert.match(line, /priority must be from 0 to 1000, got -1 — /);
      const cases: string[][] = [
        ['task', 'add', 'has space'],
        ['task', 'add', 'k3', '--label', ''],
        ['task', 'add', 'k3', '--priority', 'high'],
        ['session', 'start', '--kind', 'robot'],
        ['claim', 'k1', '--session', 'abc'],
        ['heartbeat', s, '--key', 'k1'],
        ['heartbeat', s, '--epoch', '1'],
        ['release', 'k1', '--session', s, '--epoch', '0'],
        ['release', 'k1', '--session', s, '--epoch', '1', '--outcome', 'abandoned'],
        ['enqueue', 'k9', '--ram-mb', '-5'],
        ['enqueue', 'k9', '--attempts', '0'],
        ['queue', 'list', '--status', 'bogus'],
        ['audit', '--limit', '0'],
        ['claim', 'k1', '--session', s, '--nope'],
        ['claim', 'k1'],
        ['task', 'add'],
        ['frobnicate'],
      ];
      for (const args of cases) assertOneErrorLine(await t.run(...args), 2, args.join(' '));
      const usage = await t.json(2, 'claim', 'k1');
      assert.equal(usage['error'], 'invalid_input');
      assert.match(String(usage['hint']), /baton claim --help/);
      assert.deepEqual(await t.counts(), before);
    });

    test('exits 2 for an unknown database scheme', async () => {
      const t = await setup();
      assertOneErrorLine(await t.run('--db', 'mysql://x', 'task', 'list'), 2, 'mysql');
      const refused = await t.json(2, 'task', 'list', '--db', 'mysql://x');
      assert.equal(refused['error'], 'invalid_input');
      assert.match(String(refused['message']), /mysql/);
      // Mistyped URLs are refused too, creating nothing (issue 14, item 9).
      for (const url of ['postgres:/baton', 'postgresql:baton', 'pg://x', 'mysql:x']) {
        const r = await t.run('--db', url, 'task', 'list');
        assertOneErrorLine(r, 2, 'unknown database scheme');
        assert.equal(existsSync(join(root, url.split('/')[0] ?? url)), false, `nothing made for ${url}`);
      }
    });

    test('queues a job, reports the active one instead of a second, lists, shows and cancels it', async () => {
      const t = await setup();
      const queued = await t.json<{ created: boolean; job: Obj }>(
        0,
        'enqueue',
        'new-task',
        '--priority',
        '5',
        '--ram-mb',
        '512',
        '--command',
        'npm test',
        '--attempts',
        '2',
      );
      assert.equal(queued.created, true);
      assert.equal(queued.job['status'], 'queued');
      const id = String(queued.job['id']);
      const again = await t.run('enqueue', 'new-task');
      assert.equal(again.code, 0);
      assert.match(again.stdout, new RegExp(`already has an active job.*job ${id} queued`));
      const jobs = await t.json<Obj[]>(0, 'queue', 'list', '--status', 'queued');
      assert.equal(jobs.length, 1);
      const fields = ['id', 'key', 'status', 'host', 'attempt', 'epoch', 'priority', 'ramMb'];
      for (const field of [...fields, 'reason']) {
        assert.ok(field in (jobs[0] ?? {}), `queue list --json lacks ${field}`);
      }
      assert.equal(jobs[0]?.['ramMb'], 512);
      assert.match((await t.run('queue', 'list')).stdout, /^ID\s+KEY\s+STATUS/);
      const job = await t.json(0, 'job', 'show', id);
      assert.equal(job['command'], 'npm test');
      assert.equal(job['attemptMax'], 2);
      assert.match(String(job['queuedAt']), ISO);
      assert.equal((await t.json(0, 'cancel', id))['status'], 'cancelled');
      assert.equal((await t.json(3, 'cancel', id))['error'], 'conflict');
      const [cancelled] = await t.json<Obj[]>(0, 'audit', '--job', id, '--type', 'job:cancelled');
      const who = (cancelled?.['detail'] as Obj | undefined)?.['by'];
      assert.match(String(who), /^.+@.+$/, 'the ledger names who cancelled');
      assert.equal(await t.count('queue', 'list', '--status', 'queued'), 0);
    });

    test('filters the audit ledger by task, session and job', async () => {
      const t = await setup();
      await t.json(0, 'task', 'add', 'k1');
      await t.json(0, 'task', 'add', 'k2');
      const s = await t.session();
      await t.claim('k1', s);
      const { job } = await t.json<{ job: Obj }>(0, 'enqueue', 'k2');
      const types = async (...args: string[]): Promise<unknown[]> =>
        (await t.json<Obj[]>(0, 'audit', ...args)).map((e) => e['type']);
      assert.deepEqual(await types('--task', 'k1'), ['task:added', 'claim:granted']);
      assert.deepEqual(await types('--session', s), ['session:started', 'claim:granted']);
      assert.deepEqual(await types('--job', String(job['id'])), ['job:enqueued']);
      assert.equal((await types('--limit', '2')).length, 2);
      const [first] = await t.json<Obj[]>(0, 'audit', '--limit', '1');
      assert.match(String(first?.['at']), ISO);
    });

    test('says there is no dispatcher leader on a fresh database', async () => {
      const t = await setup();
      const expected = { session: null, host: null, pid: null, term: null, expiresAt: null, current: false };
      assert.deepEqual(await t.json(0, 'leader'), expected);
      assert.match((await t.run('leader')).stdout, /^no dispatcher leader/);
    });

    test('prefers --db over BATON_DB', async () => {
      const t = await setup();
      const other = await fresh();
      await t.json(0, 'task', 'add', 'only-in-baton-db');
      assert.equal(await t.count('task', 'list'), 1);
      assert.equal(await t.count('task', 'list', '--db', other), 0);
    });
  });
}

describe('baton CLI without a database', () => {
  test('prints help with the exit code table and the database explanation', async () => {
    const run = await baton('unused.db', '--help');
    assert.equal(run.code, 0);
    for (const text of ['Exit codes:', 'BATON_DB', '--db', 'store_unavailable', 'fenced']) {
      assert.ok(run.stdout.includes(text), `help lacks ${text}`);
    }
    const sub = await baton('unused.db', 'claim', '--help');
    assert.equal(sub.code, 0);
    assert.match(sub.stdout, /--session <id>/);
  });

  const skip = postgresEngineBuilt ? false : 'the PostgreSQL engine is not built yet';
  test('exits 5 with one line when PostgreSQL is unreachable', { skip }, async () => {
    assertOneErrorLine(await baton(UNREACHABLE_PG, 'task', 'list'), 5, 'unreachable postgres');
    const refused = await bundle(UNREACHABLE_PG).json(5, 'task', 'list');
    assert.equal(refused['error'], 'store_unavailable');
  });
});
