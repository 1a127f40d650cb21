/**
 * `baton audit --follow` (decision 0027): a real follower process prints the rows other processes
 * write, in id order, filtered, as JSON Lines, from the database and over HTTP (`baton serve`), on
 * both engines; on PostgreSQL it never skips a lower id that commits after a higher one; SIGINT
 * ends it with exit 0; bad input is one line and exit 2 before anything is read.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { baton, repoRoot, type Run } from '../../test/support/cli.js';
import { bothEngines, sqliteDatabase } from '../../test/support/databases.js';
import { waitUntil } from '../../test/support/wait.js';
import { someActivity, withLedger } from '../../test/ledger/ledger-fixture.js';

const root = repoRoot();

type Env = Readonly<Record<string, string>>;

interface Row {
  readonly id: number;
  readonly type: string;
  readonly key: string | null;
}

function cleanEnv(extra: Env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return { ...env, ...extra };
}

/** Followers still running: a failed case kills them, so the file does not wait on them. */
const running = new Set<ReturnType<typeof spawn>>();
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** `baton audit --follow ...args` running in the background; `stop` sends a signal and waits for the end. */
function follower(env: Env, args: readonly string[]) {
  const child = spawn(process.execPath, ['bin/baton.js', 'audit', '--follow', '--json', ...args], {
    cwd: root,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const ended = new Promise<{ code: number | null; signal: string | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  );
  running.add(child);
  void ended.then(() => running.delete(child));
  return {
    rows: (): Row[] =>
      out
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Row),
    /** Pauses it (SIGSTOP) or lets it go on (SIGCONT). */
    pause: (paused: boolean) => child.kill(paused ? 'SIGSTOP' : 'SIGCONT'),
    stop: async (signal: NodeJS.Signals = 'SIGINT') => {
      child.kill(signal);
      return { ...(await ended), stderr: err };
    },
  };
}

/** `baton serve` on the database and a viewer token: reading the ledger needs no more. */
async function serveOn(db: string): Promise<{ env: Env; stop: () => void }> {
  const made = await baton(db, 'token', 'create', '--scope', 'viewer', '--json');
  const token = (JSON.parse(made.stdout) as { token: string }).token;
  const server = spawn(process.execPath, ['bin/baton.js', 'serve', '--http', '127.0.0.1:0'], {
    cwd: root,
    env: cleanEnv({ BATON_DB: db }),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  server.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await waitUntil(() => /http:\/\/127\.0\.0\.1:\d+/.test(out), 15_000, 'baton serve');
  const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '';
  return { env: { BATON_URL: url, BATON_TOKEN: token }, stop: () => server.kill('SIGTERM') };
}

/** Where a follower reads: the database itself, or `baton serve` on it. */
async function readerOn(db: string, mode: 'db' | 'api'): Promise<{ env: Env; stop: () => void }> {
  return mode === 'db' ? { env: { BATON_DB: db }, stop: () => undefined } : serveOn(db);
}

async function ok(run: Promise<Run>): Promise<Run> {
  const done = await run;
  assert.equal(done.code, 0, done.stderr);
  return done;
}

const ledger = async (db: string, ...args: string[]): Promise<Row[]> =>
  JSON.parse((await ok(baton(db, 'audit', '--json', ...args))).stdout) as Row[];

const lastId = async (db: string): Promise<number> => (await ledger(db)).at(-1)?.id ?? 0;

for (const db of bothEngines()) {
  for (const mode of ['db', 'api'] as const) {
    const where = mode === 'db' ? 'from the database' : 'over HTTP';
    describe(`${db.name}: baton audit --follow ${where}`, () => {
      test('prints the rows other processes write, in id order, filtered, and ends with exit 0 on SIGINT', async () => {
        const url = await db.fresh();
        await ok(baton(url, 'task', 'add', 'old'));
        const reader = await readerOn(url, mode);
        const start = await lastId(url);
        try {
          const all = follower(reader.env, ['--after', String(start)]);
          const some = follower(reader.env, [
            '--after',
            String(start),
            '--type',
            'job:enqueued',
            '--task',
            'k2',
          ]);
          const fromNow = follower(reader.env, []);
          for (const args of [
            ['task', 'add', 'k1'],
            ['task', 'add', 'k2'],
            ['enqueue', 'k1'],
            ['enqueue', 'k2'],
          ])
            await ok(baton(url, ...args));
          const written = await ledger(url, '--after', String(start));
          assert.equal(written.length, 4);
          await waitUntil(() => all.rows().length >= 4, 15_000, 'the follower to print four rows');
          // Without --after it starts at the newest row: write until it prints one, then compare.
          await waitUntil(
            async () => {
              if (fromNow.rows().length > 0) return true;
              await ok(baton(url, 'task', 'add', `n${Date.now()}`));
              return false;
            },
            15_000,
            'the follower from now to print a row',
            300,
          );
          const since = await ledger(url, '--after', String(start));
          const newest = since.at(-1)?.id;
          await waitUntil(
            () =>
              all.rows().length >= since.length &&
              some.rows().length >= 1 &&
              fromNow.rows().at(-1)?.id === newest,
            15_000,
            'every row',
          );
          assert.deepEqual(
            all.rows(),
            since,
            'every row, once, in id order, as `baton audit --json` prints it',
          );
          assert.deepEqual(
            some.rows(),
            since.filter((row) => row.type === 'job:enqueued' && row.key === 'k2'),
          );
          const seen = fromNow.rows();
          assert.ok(
            seen.every((row) => row.id > start),
            `nothing from before it began: ${seen.map((r) => r.id).join(',')}`,
          );
          assert.deepEqual(seen, since.slice(since.length - seen.length), 'the newest rows, in order');
          for (const [name, one] of [
            ['all', all],
            ['some', some],
            ['fromNow', fromNow],
          ] as const) {
            const end = await one.stop('SIGINT');
            assert.deepEqual(end, { code: 0, signal: null, stderr: '' }, name);
          }
        } finally {
          reader.stop();
        }
      });

      if (db.engine !== 'postgres') return;
      test('prints a lower id that commits after a higher one, before it and never skipping it', async () => {
        const url = await db.fresh();
        await ok(baton(url, 'task', 'add', 'old'));
        const reader = await readerOn(url, mode);
        const start = await lastId(url);
        const writer = new pg.Client({ connectionString: url });
        await writer.connect();
        try {
          const all = follower(reader.env, ['--after', String(start)]);
          await writer.query('BEGIN');
          const { rows } = await writer.query<{ id: string }>(
            `INSERT INTO audit_events (at, type, detail) VALUES (now(), 'task:added', '{}') RETURNING id`,
          );
          const low = Number(rows[0]?.id);
          // Started while a writer is in flight: a fresh process's first look at the horizon has
          // settled nothing yet, and a start taken from it printed the whole ledger.
          const fromNow = follower(reader.env, []);
          await new Promise((resolve) => setTimeout(resolve, 1_500)); // it has started and looked
          await ok(baton(url, 'task', 'add', 'quick'));
          const high = await lastId(url);
          assert.ok(high > low, 'the committed row has the higher id');
          // The follower polls a few times while the lower id is in flight.
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          await writer.query('COMMIT');
          await waitUntil(() => all.rows().some((row) => row.id === high), 15_000, `row ${high}`);
          assert.deepEqual(
            all.rows().map((row) => row.id),
            [low, high],
            'the lower id first, once it committed, and the higher one after it',
          );
          assert.deepEqual(await all.stop('SIGTERM'), { code: 0, signal: null, stderr: '' });
          await waitUntil(
            () => fromNow.rows().some((row) => row.id === high),
            15_000,
            `row ${high}, from now`,
          );
          assert.deepEqual(
            fromNow.rows().map((row) => row.id),
            [low, high],
            `nothing from before it began (row ${start} and below)`,
          );
          assert.deepEqual(await fromNow.stop('SIGTERM'), { code: 0, signal: null, stderr: '' });
        } finally {
          await writer.end();
          reader.stop();
        }
      });
    });
  }
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton audit --follow under audit prune`, () => {
    test('goes on printing after the rows before and under its cursor are pruned, without an error', () =>
      withLedger(db, async (f) => {
        await someActivity(f.store, 'old');
        const [old] = (await f.baton.ledger.seal(f.signer)).sealed;
        assert.ok(old !== undefined);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const cut = new Date(await f.store.now()).toISOString();
        await new Promise((resolve) => setTimeout(resolve, 20));
        await someActivity(f.store, 'new');
        await f.baton.ledger.seal(f.signer);
        const env = { BATON_DB: f.url };
        const caughtUp = follower(env, ['--after', '0']);
        const total = (await ledger(f.url)).length;
        await waitUntil(() => caughtUp.rows().length === total, 15_000, 'the follower to catch up');
        // Paused before its first read with its cursor at 1, inside the range about to go: the rows
        // after its cursor are removed under it, and it reads on once let go.
        const behind = follower(env, ['--after', '1']);
        behind.pause(true);
        const prune = ['audit', 'prune', '--before', cut, '--key-file', f.keyFile];
        assert.match((await ok(baton(f.url, ...prune))).stdout, /^pruned \d+ rows/);
        behind.pause(false);
        await someActivity(f.store, 'later');
        const now = await ledger(f.url);
        assert.ok(
          now.every((row) => row.id > old.lastId),
          'the old rows are gone',
        );
        const newest = now.at(-1)?.id;
        await waitUntil(
          () => caughtUp.rows().at(-1)?.id === newest && behind.rows().at(-1)?.id === newest,
          15_000,
          'both followers to reach the newest row',
        );
        const printed = caughtUp.rows();
        assert.deepEqual(
          printed.slice(total),
          now.filter((row) => row.id > (printed[total - 1]?.id ?? 0)),
        );
        assert.ok(printed.slice(total).some((row) => row.type === 'ledger:pruned'));
        assert.deepEqual(behind.rows(), now, 'what is left, in order');
        for (const one of [caughtUp, behind]) {
          assert.deepEqual(await one.stop('SIGINT'), { code: 0, signal: null, stderr: '' });
        }
      }));
  });
}

describe('baton audit --follow: bad input', () => {
  test('refuses --limit, a malformed --after and an unknown task in one line, before reading anything', async () => {
    const url = await sqliteDatabase().fresh();
    for (const mode of ['db', 'api'] as const) {
      const reader = await readerOn(url, mode);
      try {
        const run = (...args: string[]): Promise<Run> =>
          new Promise((done) => {
            const child = spawn(process.execPath, ['bin/baton.js', 'audit', '--follow', ...args], {
              cwd: root,
              env: cleanEnv(reader.env),
            });
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
            child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
            child.on('exit', (code) => done({ code: code ?? -1, stdout, stderr }));
          });
        for (const [args, code, says] of [
          [['--limit', '5'], 2, /--limit and --follow do not go together/],
          [['--after', 'x'], 2, /--after must be a whole number, got "x"/],
          [['--after', '-1'], 2, /--after/],
          [['--type', 'nonsense'], 2, /--type must be one of/],
          [['--task', 'nope'], 4, /task nope not found/],
        ] as const) {
          const refused = await run(...args);
          const what = `${mode}: --follow ${args.join(' ')}`;
          assert.equal(refused.code, code, `${what}: ${refused.stderr}`);
          assert.match(refused.stderr, says, what);
          assert.equal(refused.stderr.trim().split('\n').length, 1, what);
          assert.equal(refused.stdout, '', what);
        }
      } finally {
        reader.stop();
      }
    }
  });
});
