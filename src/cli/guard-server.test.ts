/**
 * The enforcing guard: `baton guard server-install` on a real bare repository, and real pushes to
 * it, `--no-verify` included (the client's pre-push hook never runs; the server's pre-receive does).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, type Run } from '../../test/support/cli.js';
import { bothEngines, sqliteDatabase, type TestDatabase } from '../../test/support/databases.js';
import { commitFile, git, isolateGit, makeRepo } from '../../test/support/git.js';
import { guardPushOptions, withPushOptions } from '../daemon/agent-push-options.js';
import { prepareWorktree } from '../os/worktree.js';

const KEY = 'github:acme/api#77';
const BRANCH = 'baton/github-acme-api-77-69cec2fc';
const root = repoRoot();
const home = isolateGit();
after(() => rmSync(home, { recursive: true, force: true }));

function spawn(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd, env }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

async function setup(engine: TestDatabase) {
  const db = await engine.fresh();
  const { repo, remote, base } = makeRepo(home);
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  for (const name of ['BATON_SESSION', 'BATON_KEY', 'BATON_EPOCH', 'BATON_DEBUG']) delete env[name];
  const u = engine.engine === 'postgres' ? new URL(db) : null;
  if (u !== null) {
    // The git server's own password file: the hook's settings hold no password.
    const file = join(base, '..', 'pgpass');
    writeFileSync(file, `${u.hostname}:${u.port}:*:${u.username}:${decodeURIComponent(u.password)}\n`, {
      mode: 0o600,
    });
    env['PGPASSFILE'] = file;
  }
  const baton = async (...args: string[]): Promise<string> => {
    const r = await spawn(process.execPath, [join(root, 'bin/baton.js'), ...args], root, env);
    assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  /** `git [global…] push --no-verify …`: the client's own hooks never run. */
  const push = (cwd: string, ...args: string[]): Promise<Run> => {
    const global = args[0] === '-c' ? args.slice(0, 2) : [];
    return spawn(
      'git',
      [...global, 'push', '--no-verify', '--quiet', ...args.slice(global.length)],
      cwd,
      env,
    );
  };
  const head = (branch: string): string =>
    git(remote, 'for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`);
  const claim = async (host: string): Promise<{ session: string; epoch: number }> => {
    const session = await baton('session', 'start', '--host', host);
    const { epoch } = JSON.parse(await baton('claim', KEY, '--session', session, '--json')) as {
      epoch: number;
    };
    return { session, epoch };
  };
  await baton('task', 'add', KEY);
  await baton('guard', 'server-install', remote);
  return { db, env, repo, remote, base, baton, push, head, claim };
}

function engines(): readonly TestDatabase[] {
  return process.env['BATON_TEST_PG_SERVERS'] ? bothEngines() : [sqliteDatabase()];
}

for (const engine of engines()) {
  describe(`the enforcing guard on ${engine.name}`, { concurrency: 2 }, () => {
    test('refuses a fenced push made with --no-verify and lets the live claim push', async () => {
      const t = await setup(engine);
      const mine = await t.claim('box-1');
      const wt = await prepareWorktree({ repoPath: t.repo, key: KEY, epoch: mine.epoch, baseDir: t.base });
      const first = commitFile(wt.path, 'a.ts', 'export {};\n');
      const options = ['-o', `baton-key=${KEY}`, '-o', `baton-epoch=${mine.epoch}`];
      // An empty token (an unset $BATON_TOKEN) is no token, and none is required here.
      const noToken = ['-o', 'baton-token='];
      const ok = await t.push(
        wt.path,
        ...options,
        ...noToken,
        '-o',
        `baton-session=${mine.session}`,
        'origin',
        BRANCH,
      );
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(t.head(BRANCH), first);

      await t.baton('release', KEY, '--session', mine.session, '--epoch', String(mine.epoch));
      const theirs = await t.claim('box-2');
      commitFile(wt.path, 'late.ts', 'export {};\n');
      for (const extra of [[], ['-c', 'core.hooksPath=/dev/null']]) {
        const refused = await t.push(wt.path, ...extra, ...options, 'origin', BRANCH);
        assert.notEqual(refused.code, 0);
        assert.match(
          refused.stderr,
          new RegExp(
            `remote: baton: push to refs/heads/${BRANCH} refused: ` +
              `the claim on \\S+ at epoch 1 is fenced off: it is at epoch ${theirs.epoch}` +
              '.* — your work is fenced off',
          ),
        );
      }
      assert.equal(t.head(BRANCH), first, 'the branch did not move');
    });

    test('reads the claim from Baton-Task and Baton-Epoch trailers when the push names none', async () => {
      const t = await setup(engine);
      const mine = await t.claim('box-1');
      const wt = await prepareWorktree({ repoPath: t.repo, key: KEY, epoch: mine.epoch, baseDir: t.base });
      writeFileSync(join(wt.path, 'b.ts'), 'export {};\n');
      git(wt.path, 'add', 'b.ts');
      git(wt.path, 'commit', '--quiet', '-m', `fix\n\nBaton-Task: ${KEY}\nBaton-Epoch: ${mine.epoch + 1}`);
      const stale = await t.push(wt.path, 'origin', BRANCH);
      assert.notEqual(stale.code, 0);
      assert.match(stale.stderr, /at epoch 2 is fenced off/);
      git(
        wt.path,
        'commit',
        '--quiet',
        '--amend',
        '-m',
        `fix\n\nBaton-Task: ${KEY}\nBaton-Epoch: ${mine.epoch}`,
      );
      const ok = await t.push(wt.path, 'origin', BRANCH);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stderr, /allowed: claim on \S+ at epoch 1 \(commit trailers\) is current/);
    });

    test("refuses a push that names no claim, or another task's claim, and lets unprotected refs through", async () => {
      const t = await setup(engine);
      const mine = await t.claim('box-1');
      const wt = await prepareWorktree({ repoPath: t.repo, key: KEY, epoch: mine.epoch, baseDir: t.base });
      commitFile(wt.path, 'c.ts', 'export {};\n');
      const bare = await t.push(wt.path, 'origin', BRANCH);
      assert.notEqual(bare.code, 0);
      assert.match(
        bare.stderr,
        /names no claim — push with -o baton-key=<key> -o baton-epoch=<epoch>, or commit/,
      );
      assert.doesNotMatch(bare.stderr, /fenced/);
      const other = 'baton/github-acme-api-78-f462a279';
      const wrong = await t.push(
        wt.path,
        '-o',
        `baton-key=${KEY}`,
        '-o',
        'baton-epoch=1',
        'origin',
        `HEAD:${other}`,
      );
      assert.notEqual(wrong.code, 0);
      assert.match(
        wrong.stderr,
        new RegExp(`is not the branch of \\S+ \\(refs/heads/${BRANCH}\\) — push to refs/heads/${BRANCH}`),
      );
      assert.doesNotMatch(wrong.stderr, /fenced/, 'the claim named is the live one');
      commitFile(t.repo, 'main.txt', 'main\n');
      assert.equal((await t.push(t.repo, 'origin', 'main')).code, 0, 'main is not protected');
    });

    test("with --require-token, a protected push opens only with the holder's token or an operator's", async () => {
      const t = await setup(engine);
      await t.baton('guard', 'server-install', t.remote, '--require-token');
      const mine = await t.claim('box-1');
      const token = async (...args: string[]): Promise<string> =>
        (JSON.parse(await t.baton('token', 'create', ...args, '--json')) as { token: string }).token;
      const holder = await token('--scope', 'agent', '--session', mine.session);
      const stranger = await t.baton('session', 'start', '--host', 'box-2');
      const wt = await prepareWorktree({ repoPath: t.repo, key: KEY, epoch: mine.epoch, baseDir: t.base });
      const first = commitFile(wt.path, 'd.ts', 'export {};\n');
      const claimOptions = ['-o', `baton-key=${KEY}`, '-o', `baton-epoch=${mine.epoch}`];
      const refusals: [string[], RegExp][] = [
        [[], /needs the holder's token — send the holder's token from its environment, never a command line/],
        [['-o', 'baton-token=baton_not-a-token'], /the push's token is unknown/],
        [
          ['-o', `baton-token=${await token('--scope', 'agent', '--session', stranger)}`],
          /is not the holder's/,
        ],
        [['-o', `baton-token=${await token('--scope', 'viewer')}`], /token \(viewer\) is not the holder's/],
      ];
      for (const [extra, why] of refusals) {
        const refused = await t.push(wt.path, ...claimOptions, ...extra, 'origin', BRANCH);
        assert.notEqual(refused.code, 0, extra.join(' '));
        assert.match(refused.stderr, why);
      }
      assert.equal(t.head(BRANCH), '', 'no refused push created the branch');
      const ok = await t.push(wt.path, ...claimOptions, '-o', `baton-token=${holder}`, 'origin', BRANCH);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(t.head(BRANCH), first);
      commitFile(wt.path, 'e.ts', 'export {};\n');
      const operator = await token('--scope', 'operator');
      const byOperator = await t.push(
        wt.path,
        ...claimOptions,
        '-o',
        `baton-token=${operator}`,
        'origin',
        BRANCH,
      );
      assert.equal(byOperator.code, 0, byOperator.stderr);
      // From the environment, as `baton up` gives its agents' git the claim and token, a plain push
      // opens; options on git's command line replace those of its config, the token's included.
      const last = commitFile(wt.path, 'f.ts', 'export {};\n');
      const claim = { key: KEY, epoch: mine.epoch, session: Number(mine.session), token: holder };
      const fromEnv = withPushOptions({}, guardPushOptions(claim));
      Object.assign(t.env, fromEnv);
      const replaced = await t.push(wt.path, ...claimOptions, 'origin', BRANCH);
      const plain = await t.push(wt.path, 'origin', BRANCH);
      for (const name of Object.keys(fromEnv)) delete t.env[name];
      assert.notEqual(replaced.code, 0);
      assert.match(replaced.stderr, /needs the holder's token — .*a push's own -o options replace it/);
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stderr, /allowed: claim on \S+ at epoch \d+ \(push options\)/);
      assert.equal(t.head(BRANCH), last);
    });

    test('installs a hook with no credential and settings readable by its owner only', async () => {
      const t = await setup(engine);
      const hook = readFileSync(join(t.remote, 'hooks', 'pre-receive'), 'utf8');
      assert.match(hook, /# baton-guard-server:/);
      assert.ok(!hook.includes(t.db));
      const settings = join(t.remote, 'baton-guard.json');
      assert.equal(statSync(settings).mode & 0o777, 0o600);
      const password = engine.engine === 'postgres' ? decodeURIComponent(new URL(t.db).password) : '';
      if (password !== '') assert.ok(!readFileSync(settings, 'utf8').includes(`:${password}@`));
      assert.equal(git(t.remote, 'config', 'receive.advertisePushOptions'), 'true');
    });

    test('refuses a --protect pattern that could match no ref, and keeps the settings it had', async () => {
      const t = await setup(engine);
      const settings = join(t.remote, 'baton-guard.json');
      const before = readFileSync(settings, 'utf8');
      for (const pattern of ['', 'baton/*', 'refs/heads/a b', 'refs/heads/baton/', 'refs/../x']) {
        const bin = join(root, 'bin/baton.js');
        const args = [
          bin,
          'guard',
          'server-install',
          t.remote,
          '--protect',
          'refs/heads/ok/*',
          '--protect',
          pattern,
        ];
        const refused = await spawn(process.execPath, args, root, { ...process.env, BATON_DB: t.db });
        assert.equal(refused.code, 2, `--protect ${JSON.stringify(pattern)}: ${refused.stderr}`);
        assert.match(
          refused.stderr,
          /^baton: --protect ".*" is not a ref pattern, so it would protect nothing — /,
        );
        assert.equal(refused.stderr.trim().split('\n').length, 1);
        assert.equal(readFileSync(settings, 'utf8'), before, 'the settings are unchanged');
      }
    });

    test('prints the verdicts of an allowed push as JSON with --json', async () => {
      const t = await setup(engine);
      const mine = await t.claim('box-1');
      const wt = await prepareWorktree({ repoPath: t.repo, key: KEY, epoch: mine.epoch, baseDir: t.base });
      const sha = commitFile(wt.path, 'c.ts', 'export {};\n');
      // The commit reaches the remote under a ref nobody protects; receive judges it for the task's branch.
      assert.equal((await t.push(wt.path, t.remote, `${sha}:refs/tmp/c`)).code, 0);
      const push = {
        GIT_DIR: t.remote,
        GIT_PUSH_OPTION_COUNT: '2',
        GIT_PUSH_OPTION_0: `baton-key=${KEY}`,
        GIT_PUSH_OPTION_1: `baton-epoch=${mine.epoch}`,
      };
      const args = [join(root, 'bin/baton.js'), '--json', 'guard', 'receive'];
      const stdin = `${'0'.repeat(40)} ${sha} refs/heads/${BRANCH}\n`;
      const r = await new Promise<Run>((done) => {
        const child = execFile(
          process.execPath,
          args,
          { cwd: t.remote, env: { ...t.env, ...push } },
          (e, o, err) =>
            done({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : -1, stdout: o, stderr: err }),
        );
        child.stdin?.end(stdin);
      });
      assert.equal(r.code, 0, r.stderr);
      const answer = JSON.parse(r.stdout) as { ok: boolean; verdicts: { ref: string; ok: boolean }[] };
      assert.equal(answer.ok, true);
      assert.deepEqual(
        answer.verdicts.map((verdict) => [verdict.ref, verdict.ok]),
        [[`refs/heads/${BRANCH}`, true]],
      );
    });
  });
}
