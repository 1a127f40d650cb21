/**
 * End-to-end tests of `baton guard`: a real repository with a bare remote, a worktree per claim
 * (prepareWorktree), the pre-push hook installed by the CLI, and real `git push`es, on SQLite and,
 * when the test runner provides servers, on PostgreSQL.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bothEngines, sqliteDatabase, type TestDatabase } from '../../test/support/databases.js';
import { commitFile, git, isolateGit, makeRepo } from '../../test/support/git.js';
import { prepareWorktree } from '../os/worktree.js';
import { serve } from '../../test/http/support.js';
import { waitUntil } from '../../test/support/wait.js';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const KEY = 'github:acme/api#1246';
const BRANCH = 'baton/github-acme-api-1246-44c34579';
const home = isolateGit();

function repoRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}
const root = repoRoot(dirname(fileURLToPath(import.meta.url)));

/** The environment of a push or a baton call: no claim variables unless the test sets them. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['BATON_DEBUG', 'BATON_SESSION', 'BATON_KEY', 'BATON_EPOCH']) {
    if (extra[name] === undefined) delete env[name];
  }
  return env;
}

function spawn(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd, env }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

/**
 * The password of a PostgreSQL URL in a password file (0600) instead: the guard's hook and claim
 * record name no password, so a push finds it there, as any libpq client would.
 */
function passfileFor(url: string, dir: string): Record<string, string> {
  const u = new URL(url);
  if (u.password === '') return {};
  const file = join(dir, 'pgpass');
  writeFileSync(
    file,
    `${u.hostname}:${u.port}:*:${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}\n`,
    {
      mode: 0o600,
    },
  );
  return { PGPASSFILE: file };
}

/** One database, one repository with a remote, and the calls a test makes against them. */
async function setup(engine: TestDatabase) {
  const db = await engine.fresh();
  const { repo, remote, base } = makeRepo(home);
  const pgEnv = engine.engine === 'postgres' ? passfileFor(db, dirname(repo)) : {};
  const baton = (args: string[], env: Record<string, string> = {}, cwd = root): Promise<Run> =>
    spawn(
      process.execPath,
      [join(root, 'bin/baton.js'), ...args],
      cwd,
      cleanEnv({ BATON_DB: db, ...pgEnv, ...env }),
    );
  const ok = async (...args: string[]): Promise<string> => {
    const run = await baton(args);
    assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
    return run.stdout.trim();
  };
  const session = (host: string): Promise<string> => ok('session', 'start', '--host', host);
  const claim = async (key: string, s: string): Promise<number> =>
    (JSON.parse(await ok('claim', key, '--session', s, '--json')) as { epoch: number }).epoch;
  /** A pushed-to branch's commit on the remote, or null. */
  const remoteHead = (branch: string): string | null => {
    const refs = git(remote, 'for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`);
    return refs === '' ? null : refs;
  };
  const push = (cwd: string, branch: string, env: Record<string, string> = {}): Promise<Run> =>
    spawn('git', ['push', '--quiet', 'origin', branch], cwd, cleanEnv({ ...pgEnv, ...env }));
  /** A task claimed by a new session on box-1, its worktree, and the guard installed in it. */
  const guarded = async (key: string) => {
    await ok('task', 'add', key);
    const s = await session('box-1');
    const epoch = await claim(key, s);
    const wt = await prepareWorktree({ repoPath: repo, key, epoch, baseDir: base });
    await ok('guard', 'install', '--dir', wt.path, '--session', s, '--key', key, '--epoch', String(epoch));
    return { session: s, epoch, ...wt };
  };
  return { db, repo, baton, ok, session, claim, remoteHead, push, guarded };
}

function engines(): readonly TestDatabase[] {
  return process.env['BATON_TEST_PG_SERVERS'] ? bothEngines() : [sqliteDatabase()];
}

after(() => rmSync(home, { recursive: true, force: true }));

for (const engine of engines()) {
  describe(`baton guard on ${engine.name}`, { concurrency: 4 }, () => {
    test('lets a push through while the claim is current and refuses it once the claim moved', async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      const first = commitFile(wt.path, 'fix.ts', 'export {};\n');
      const allowed = await t.push(wt.path, BRANCH);
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.equal(t.remoteHead(BRANCH), first);

      await t.ok('release', KEY, '--session', wt.session, '--epoch', String(wt.epoch));
      const other = await t.session('box-2');
      assert.equal(await t.claim(KEY, other), 2);
      commitFile(wt.path, 'late.ts', 'export {};\n');
      const refused = await t.push(wt.path, BRANCH);
      assert.notEqual(refused.code, 0);
      const line = `baton: push refused: the claim on ${KEY} moved to epoch 2 held by session ${other} on box-2`;
      assert.ok(refused.stderr.includes(`${line} — your work is fenced off`), refused.stderr);
      assert.equal(t.remoteHead(BRANCH), first, 'the remote branch did not move');
    });

    test('exits 3 with one line naming the new holder when checked directly', async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      const current = await t.baton(['guard', 'check'], {}, wt.path);
      assert.equal(current.code, 0, current.stderr);
      assert.match(current.stdout, new RegExp(`push allowed: session ${wt.session} holds .* at epoch 1`));
      await t.ok('release', KEY, '--session', wt.session, '--epoch', '1');
      const other = await t.session('box-2');
      await t.claim(KEY, other);
      const fenced = await t.baton(['guard', 'check', '--dir', wt.path]);
      assert.equal(fenced.code, 3);
      assert.deepEqual(
        fenced.stderr.split('\n').filter((l) => l !== ''),
        [
          `baton: push refused: the claim on ${KEY} moved to epoch 2 held by session ${other} on box-2 — ` +
            'your work is fenced off',
        ],
      );
    });

    test('refuses the push once the pushing session has ended', async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      await t.ok('session', 'end', wt.session);
      commitFile(wt.path, 'fix.ts', 'export {};\n');
      const refused = await t.push(wt.path, BRANCH);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /push refused: session \d+ is ended/);
      assert.equal(t.remoteHead(BRANCH), null);
      assert.equal((await t.baton(['guard', 'check', '--dir', wt.path])).code, 3);
    });

    test('guards each worktree by its own claim although all worktrees share one hook', async () => {
      const t = await setup(engine);
      const a = await t.guarded(KEY);
      const b = await t.guarded('JIRA-12');
      await t.ok('release', KEY, '--session', a.session, '--epoch', '1');
      commitFile(a.path, 'a.ts', 'a\n');
      const pushedB = commitFile(b.path, 'b.ts', 'b\n');
      assert.notEqual((await t.push(a.path, a.branch)).code, 0);
      assert.equal((await t.push(b.path, b.branch)).code, 0);
      assert.equal(t.remoteHead(a.branch), null);
      assert.equal(t.remoteHead(b.branch), pushedB);
      // The main checkout records no claim: the shared hook lets it push.
      commitFile(t.repo, 'main.txt', 'main\n');
      assert.equal((await t.push(t.repo, 'main')).code, 0);
    });

    test('writes no credential: the hook names no database, the claim record (0600) no password', async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      const hook = readFileSync(join(t.repo, '.git', 'hooks', 'pre-push'), 'utf8');
      assert.ok(!hook.includes(t.db) && !hook.includes('--default-db'), hook);
      const record = join(git(wt.path, 'rev-parse', '--absolute-git-dir'), 'baton-claim.json');
      assert.equal(statSync(record).mode & 0o777, 0o600);
      const password = engine.engine === 'postgres' ? decodeURIComponent(new URL(t.db).password) : '';
      const db = (JSON.parse(readFileSync(record, 'utf8')) as { db: string }).db;
      if (password !== '') assert.ok(!db.includes(`:${password}@`), db);
      commitFile(wt.path, 'fix.ts', 'export {};\n');
      assert.equal((await t.push(wt.path, BRANCH)).code, 0, 'the push finds the password in PGPASSFILE');
    });

    test("takes the claim from BATON_SESSION, BATON_KEY and BATON_EPOCH before the worktree's record", async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      const stale = { BATON_SESSION: wt.session, BATON_KEY: KEY, BATON_EPOCH: '7' };
      const refused = await t.baton(['guard', 'check', '--dir', wt.path], stale);
      assert.equal(refused.code, 3);
      // Epoch 7 was never granted: not "moved to epoch 1" (issue 14, item 12).
      assert.match(
        refused.stderr,
        /epoch 7 was never granted on \S+: its live claim is at epoch 1, held by session/,
      );
      assert.doesNotMatch(refused.stderr, /moved to/);
      commitFile(wt.path, 'fix.ts', 'export {};\n');
      assert.notEqual((await t.push(wt.path, BRANCH, stale)).code, 0);
      assert.equal((await t.push(wt.path, BRANCH)).code, 0);
    });

    test("with BATON_URL and BATON_TOKEN asks the API with the agent's token, never the database", async () => {
      const t = await setup(engine);
      const wt = await t.guarded(KEY);
      const api = await serve(t.db);
      try {
        const made = await t.ok('token', 'create', '--scope', 'agent', '--session', wt.session, '--json');
        const token = (JSON.parse(made) as { token: string }).token;
        // The claim record names a database no push can open: only the API can answer.
        const record = join(git(wt.path, 'rev-parse', '--absolute-git-dir'), 'baton-claim.json');
        const recorded = JSON.parse(readFileSync(record, 'utf8')) as Record<string, unknown>;
        writeFileSync(record, JSON.stringify({ ...recorded, db: 'sqlite:/nonexistent/baton.db' }), {
          mode: 0o600,
        });
        const claimEnv = { BATON_SESSION: wt.session, BATON_KEY: KEY, BATON_EPOCH: String(wt.epoch) };
        const agent = { ...claimEnv, BATON_URL: api.url, BATON_TOKEN: token };
        const first = commitFile(wt.path, 'fix.ts', 'export {};\n');
        const local = await t.push(wt.path, BRANCH, claimEnv);
        assert.match(
          local.stderr,
          /the database \/nonexistent\/baton\.db does not exist/,
          'the control opens it',
        );
        const allowed = await t.push(wt.path, BRANCH, agent);
        assert.equal(allowed.code, 0, allowed.stderr);
        assert.equal(t.remoteHead(BRANCH), first);
        const checked = await t.baton(['guard', 'check', '--dir', wt.path, '--json'], agent);
        assert.equal((JSON.parse(checked.stdout) as { via: string }).via, 'api', checked.stderr);

        await t.ok('release', KEY, '--session', wt.session, '--epoch', String(wt.epoch));
        const other = await t.session('box-2');
        await t.claim(KEY, other);
        commitFile(wt.path, 'late.ts', 'export {};\n');
        const moved = await t.push(wt.path, BRANCH, agent);
        assert.notEqual(moved.code, 0);
        assert.match(
          moved.stderr,
          new RegExp(`push refused: the claim on \\S+ moved to epoch 2 held by session ${other}`),
        );
        await t.ok('session', 'end', wt.session);
        // The claim moved already (exit 3 too): wait for the refusal of the token itself, which a
        // server that verified it within its 2 s cache may still accept for a moment.
        await waitUntil(
          async () =>
            /no longer accepts/.test((await t.baton(['guard', 'check', '--dir', wt.path], agent)).stderr),
          10_000,
          "the ended session's token to be refused",
        );
        const dead = await t.push(wt.path, BRANCH, agent);
        assert.notEqual(dead.code, 0);
        assert.match(dead.stderr, /push refused: Baton's API no longer accepts this run's token/);
        assert.equal(t.remoteHead(BRANCH), first, 'the remote branch did not move');
      } finally {
        await api.stop();
      }
    });

    test('refuses to install for a claim that is not current, or over a hook that is not its own', async () => {
      const t = await setup(engine);
      await t.ok('task', 'add', KEY);
      const s = await t.session('box-1');
      const wt = await prepareWorktree({
        repoPath: t.repo,
        key: KEY,
        epoch: 1,
        baseDir: join(t.repo, '..', 'w'),
      });
      const install = ['guard', 'install', '--dir', wt.path];
      const notHeld = await t.baton([...install, '--session', s, '--key', KEY, '--epoch', '1']);
      assert.equal(notHeld.code, 3);
      assert.match(
        notHeld.stderr,
        /nothing to guard: epoch 1 was never granted on \S+: the newest claim ever granted on it is epoch 0/,
      );
      await t.claim(KEY, s);
      // Held at epoch 1, asked for epoch 2: never granted, not "moved to epoch 1" (issue 14, item 12).
      const ahead = await t.baton([...install, '--session', s, '--key', KEY, '--epoch', '2']);
      assert.equal(ahead.code, 3);
      assert.match(
        ahead.stderr,
        /nothing to guard: epoch 2 was never granted on \S+: its live claim is at epoch 1/,
      );
      assert.doesNotMatch(ahead.stderr, /moved to epoch/);
      const hook = join(t.repo, '.git', 'hooks', 'pre-push');
      writeFileSync(hook, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      const theirs = await t.baton(install, { BATON_SESSION: s, BATON_KEY: KEY, BATON_EPOCH: '1' });
      assert.equal(theirs.code, 3);
      assert.match(theirs.stderr, /pre-push exists and is not Baton's/);
      assert.equal(readFileSync(hook, 'utf8'), '#!/bin/sh\nexit 0\n');
      const missing = await t.baton(install);
      assert.equal(missing.code, 2);
    });
  });
}
