/**
 * `baton hook <event>` fed the JSON Claude Code sends (the shapes of its hooks reference, as
 * version 2.1 sends them), and `baton hooks install|uninstall` on a project's settings.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../store/open.js';
import type { Store } from '../../store/store.js';
import { baton, repoRoot } from '../../../test/support/cli.js';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { fakeClaude, keeperBeating } from '../../../test/support/fake-claude.js';
import { git, isolateGit, makeRepo } from '../../../test/support/git.js';
import { waitUntil } from '../../../test/support/wait.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');
const KEY = 'github:acme/api#31';

interface HookRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function payload(event: string, claudeSession: string, cwd: string, extra: Record<string, unknown> = {}) {
  const base = {
    session_id: claudeSession,
    transcript_path: join(tmpdir(), `${claudeSession}.jsonl`),
    cwd,
    hook_event_name: event,
  };
  const byEvent: Record<string, Record<string, unknown>> = {
    SessionStart: { source: 'startup', model: 'claude-sonnet-4-6' },
    PreToolUse: {
      permission_mode: 'default',
      tool_name: 'Edit',
      tool_input: { file_path: join(cwd, 'a.txt'), old_string: 'a', new_string: 'b', replace_all: false },
      tool_use_id: 'toolu_01',
    },
    PostToolUse: {
      permission_mode: 'default',
      tool_name: 'Bash',
      tool_input: { command: 'npm test', description: 'run the tests' },
      tool_response: { stdout: 'ok', stderr: '', interrupted: false, isImage: false },
      tool_use_id: 'toolu_02',
    },
    Stop: { permission_mode: 'default', stop_hook_active: false, last_assistant_message: 'Done.' },
    SessionEnd: { reason: 'other' },
  };
  return JSON.stringify({ ...base, ...byEvent[event], ...extra });
}

/** Runs `baton hook <command>` as Claude Code does: through sh -c, the JSON on stdin. */
function hook(command: string, input: string, env: NodeJS.ProcessEnv, args: string[] = []): Promise<HookRun> {
  return new Promise((resolve) => {
    const line = [process.execPath, BIN, 'hook', command, ...args].map((a) => `'${a}'`).join(' ');
    const child = spawn('/bin/sh', ['-c', line], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

interface Fixture {
  readonly db: string;
  readonly store: Store;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

async function withFixture(body: (f: Fixture) => Promise<void>): Promise<void> {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  const cwd = mkdtempSync(join(tmpdir(), 'baton-hooks-'));
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], BATON_HOOK_STATE_DIR: join(cwd, '.state') };
  try {
    await store.tasks.add({ key: KEY, title: 'hooks' });
    await body({ db, store, cwd, env });
  } finally {
    await store.close();
  }
}

const withTask = (db: string) => ['--default-db', db, '--task', KEY];

describe('baton hook', () => {
  test('pre-tool exits 0 while the claim is current, and 2 naming the new holder once it was taken over', () =>
    withFixture(async ({ db, store, cwd, env }) => {
      const start = await hook('session-start', payload('SessionStart', 'cc-1', cwd), env, withTask(db));
      assert.equal(start.code, 0, start.stderr);
      const context = JSON.parse(start.stdout) as { hookSpecificOutput: Record<string, string> };
      assert.equal(context.hookSpecificOutput['hookEventName'], 'SessionStart');
      assert.match(
        context.hookSpecificOutput['additionalContext'] ?? '',
        new RegExp(`holds ${KEY} \\(epoch 1`),
      );
      const allowed = await hook('pre-tool', payload('PreToolUse', 'cc-1', cwd), env, withTask(db));
      assert.deepEqual([allowed.code, allowed.stdout, allowed.stderr], [0, '', '']);
      const mine = (await store.tasks.get(KEY))?.holder?.session ?? 0;
      await store.sessions.end(mine);
      const other = await store.sessions.start({ kind: 'agent', host: 'box-9', pid: 9 });
      assert.ok((await store.claims.acquire({ key: KEY, session: other.id })).ok);
      const blocked = await hook('pre-tool', payload('PreToolUse', 'cc-1', cwd), env, withTask(db));
      assert.equal(blocked.code, 2);
      assert.equal(blocked.stdout, '');
      assert.match(
        blocked.stderr,
        new RegExp(`^Baton: the claim on ${KEY} at epoch 1 is not current: its session has ended, and `),
      );
      assert.match(
        blocked.stderr,
        new RegExp(`${KEY} is held by session ${other.id} on box-9 since .* \\(epoch 2\\)`),
      );
      const again = await hook('pre-tool', payload('PreToolUse', 'cc-1', cwd), env, withTask(db));
      assert.equal(again.code, 2, 'a fenced session stays blocked');
    }));

  test('stop tells the user when its release was fenced off, and ends the session all the same', () =>
    withFixture(async ({ db, store, cwd, env }) => {
      const start = await hook('session-start', payload('SessionStart', 'cc-1', cwd), env, withTask(db));
      assert.equal(start.code, 0, start.stderr);
      const mine = (await store.tasks.get(KEY))?.holder?.session ?? 0;
      // An operator takes the task from it while its session lives on; another session claims it.
      await store.claims.forceRelease({ key: KEY, reason: 'reassigned', by: { name: 'ops' } });
      const other = await store.sessions.start({ kind: 'agent', host: 'box-9', pid: 9 });
      assert.ok((await store.claims.acquire({ key: KEY, session: other.id })).ok);
      const stopped = await hook('stop', payload('Stop', 'cc-1', cwd), env, withTask(db));
      assert.equal(stopped.code, 1, 'a non-blocking error shown to the user');
      assert.match(
        stopped.stderr,
        new RegExp(
          `^baton hook stop: the release of ${KEY} was refused: the claim on ${KEY} at epoch 1 is no longer ` +
            `current: it is now held by session ${other.id} on box-9 since \\S+ \\(epoch 2\\)\n$`,
        ),
      );
      assert.equal((await store.sessions.get(mine))?.state, 'ended', 'the session is ended all the same');
      assert.equal((await store.tasks.get(KEY))?.holder?.session, other.id, "the other's claim is untouched");
    }));

  test('pre-tool blocks while the task is held elsewhere, and claims it once the holder lets go', () =>
    withFixture(async ({ db, store, cwd, env }) => {
      const other = await store.sessions.start({ kind: 'human', host: 'desk-2', pid: 2 });
      const held = await store.claims.acquire({ key: KEY, session: other.id });
      assert.ok(held.ok);
      const start = await hook('session-start', payload('SessionStart', 'cc-2', cwd), env, withTask(db));
      assert.match(start.stdout, new RegExp(`held by session ${other.id} on desk-2`));
      const blocked = await hook('pre-tool', payload('PreToolUse', 'cc-2', cwd), env, withTask(db));
      assert.equal(blocked.code, 2);
      assert.match(
        blocked.stderr,
        new RegExp(`${KEY} is held by session ${other.id} on desk-2 .*Stop: do not work`),
      );
      await store.claims.release({
        key: KEY,
        session: other.id,
        epoch: held.claim.epoch,
        outcome: 'released',
      });
      const allowed = await hook('pre-tool', payload('PreToolUse', 'cc-2', cwd), env, withTask(db));
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.equal((await store.claims.current(KEY))?.epoch, 2);
    }));

  test('takes the task from the branch: the key Baton recorded on it, or a task named like the branch', () =>
    withFixture(async ({ db, store, env }) => {
      isolateGit();
      const { repo } = makeRepo(mkdtempSync(join(tmpdir(), 'baton-hooks-git-')));
      git(repo, 'checkout', '--quiet', '-b', 'baton/github-acme-api-31');
      git(repo, 'config', 'branch.baton/github-acme-api-31.batonKey', KEY);
      const recorded = await hook('session-start', payload('SessionStart', 'cc-b1', repo), env, [
        '--default-db',
        db,
      ]);
      assert.match(recorded.stdout, new RegExp(`holds ${KEY} \\(epoch 1`));
      await hook('session-end', payload('SessionEnd', 'cc-b1', repo), env, ['--default-db', db]);
      await store.tasks.add({ key: 'fix-login', title: 'named like the branch' });
      git(repo, 'checkout', '--quiet', '-b', 'fix-login');
      const named = await hook('session-start', payload('SessionStart', 'cc-b2', repo), env, [
        '--default-db',
        db,
      ]);
      assert.match(named.stdout, /holds fix-login \(epoch 1/);
      git(repo, 'checkout', '--quiet', '-b', 'no-such-task');
      const none = await hook('session-start', payload('SessionStart', 'cc-b3', repo), env, [
        '--default-db',
        db,
      ]);
      assert.deepEqual([none.code, none.stdout], [0, '']);
      assert.equal(
        (await hook('pre-tool', payload('PreToolUse', 'cc-b3', repo), env, ['--default-db', db])).code,
        0,
      );
    }));

  test('fails closed: a claimed task whose database cannot be read blocks; with no task nothing is blocked', () =>
    withFixture(async ({ db, cwd, env }) => {
      const down = { ...env, BATON_DB: 'postgres://baton@127.0.0.1:1/nothing' };
      const blocked = await hook('pre-tool', payload('PreToolUse', 'cc-3', cwd), down, withTask(db));
      assert.equal(blocked.code, 2);
      assert.match(
        blocked.stderr,
        /^Baton: cannot check this session's claim \(.*\)\. Stop, and tell the user\.\n$/,
      );
      const garbled = await hook('pre-tool', '{"tool_name": "Edit"', env, withTask(db));
      assert.equal(garbled.code, 2);
      assert.match(garbled.stderr, /expects Claude Code's PreToolUse JSON/);
      const free = await hook('pre-tool', payload('PreToolUse', 'cc-4', cwd), down, ['--default-db', db]);
      assert.equal(free.code, 0, 'no task: not guarded');
    }));

  test("a runner's session: the hooks check and mark its claim, and leave the session and claim to the runner", () =>
    withFixture(async ({ db, store, cwd, env }) => {
      const s = await store.sessions.start({ kind: 'agent', host: 'runner', pid: 3 });
      const c = await store.claims.acquire({ key: KEY, session: s.id });
      assert.ok(c.ok);
      const given = {
        ...env,
        BATON_DB: db,
        BATON_SESSION: String(s.id),
        BATON_KEY: KEY,
        BATON_EPOCH: String(c.claim.epoch),
      };
      const start = await hook('session-start', payload('SessionStart', 'cc-5', cwd), given);
      assert.match(start.stdout, new RegExp(`Baton session ${s.id}\\)`));
      assert.equal((await store.sessions.list()).length, 1, 'no session of its own');
      assert.equal((await hook('pre-tool', payload('PreToolUse', 'cc-5', cwd), given)).code, 0);
      for (let i = 0; i < 3; i++) await hook('post-tool', payload('PostToolUse', 'cc-5', cwd), given);
      const other = { tool_input: { command: 'npm run lint', description: 'lint' } };
      await hook('post-tool', payload('PostToolUse', 'cc-5', cwd, other), given);
      const progress = await store.progress.get(s.id);
      assert.equal(progress?.toolCalls, 2, 'the same call three times in a row counts once');
      assert.equal(progress?.note, 'tool Bash');
      assert.equal((await hook('stop', payload('Stop', 'cc-5', cwd), given)).code, 0);
      assert.equal((await hook('session-end', payload('SessionEnd', 'cc-5', cwd), given)).code, 0);
      assert.equal((await store.sessions.get(s.id))?.state, 'live');
      assert.equal((await store.claims.current(KEY))?.session, s.id, 'the runner releases it, not the hooks');
    }));

  test('the keeper heartbeats the session while Claude Code runs, and ends it when Claude Code dies unannounced', () =>
    withFixture(async ({ db, store, cwd, env }) => {
      const claude = fakeClaude(
        [process.execPath, BIN, 'hook', 'session-start', ...withTask(db)],
        payload('SessionStart', 'cc-6', cwd),
        { ...env, BATON_HOOK_HEARTBEAT_INTERVAL: '0.2' },
      );
      try {
        const session = await keeperBeating(store, KEY);
        claude.kill('SIGKILL');
        await waitUntil(
          async () => (await store.sessions.get(session))?.state === 'ended',
          10_000,
          'the end',
        );
        assert.equal((await store.tasks.get(KEY))?.holder, null);
        assert.equal((await store.claims.history(KEY))[0]?.outcome, 'abandoned');
      } finally {
        claude.kill('SIGKILL');
      }
    }));
});

describe('baton hooks install | uninstall', () => {
  test("merges Baton's hooks into the user's settings, idempotently, and uninstall removes exactly them", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-settings-'));
    mkdirSync(join(dir, '.claude'));
    const file = join(dir, '.claude', 'settings.json');
    const mine = {
      permissions: { allow: ['Bash(npm test:*)'] },
      hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'my-guard.sh' }] }] },
      env: { FOO: 'bar' },
    };
    writeFileSync(file, JSON.stringify(mine, null, 2));
    const db = join(dir, 'baton.db');
    const first = await baton(db, 'hooks', 'install', 'claude', '--dir', dir, '--task', KEY, '--json');
    assert.equal(first.code, 0, first.stderr);
    const installed = JSON.parse(readFileSync(file, 'utf8')) as typeof mine & {
      hooks: Record<string, unknown[]>;
    };
    assert.deepEqual(installed.permissions, mine.permissions);
    assert.deepEqual(installed.env, mine.env);
    assert.deepEqual(Object.keys(installed.hooks), [
      'PreToolUse',
      'SessionStart',
      'PostToolUse',
      'SessionEnd',
      'Stop',
    ]);
    const pre = installed.hooks['PreToolUse'] as { matcher: string; hooks: { command: string }[] }[];
    assert.equal(pre[0]?.hooks[0]?.command, 'my-guard.sh', "the user's hook stays first");
    assert.equal(pre[1]?.matcher, 'Edit|Write|MultiEdit|NotebookEdit|Bash');
    assert.match(
      pre[1]?.hooks[0]?.command ?? '',
      new RegExp(`baton\\.js' hook pre-tool --default-db '${db}' --task '${KEY}'$`),
    );
    const text = readFileSync(file, 'utf8');
    const second = await baton(db, 'hooks', 'install', 'claude', '--dir', dir, '--task', KEY, '--json');
    assert.equal((JSON.parse(second.stdout) as { changed: boolean }).changed, false);
    assert.equal(readFileSync(file, 'utf8'), text, 'installing twice changes nothing');
    const removed = await baton(db, 'hooks', 'uninstall', '--dir', dir);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), mine);
    const endOnly = await baton(
      db,
      'hooks',
      'install',
      'claude',
      '--dir',
      dir,
      '--release-on',
      'session-end',
      '--json',
    );
    assert.deepEqual((JSON.parse(endOnly.stdout) as { events: string[] }).events, [
      'SessionStart',
      'PreToolUse',
      'PostToolUse',
      'SessionEnd',
    ]);
  });

  test('writes no database password into the project, nor into an MCP configuration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-settings-'));
    const url = 'postgres://baton:s3cretpw@127.0.0.1:1/baton';
    const r = await baton(url, 'hooks', 'install', 'claude', '--dir', dir);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(join(dir, '.claude', 'settings.json'), 'utf8');
    assert.doesNotMatch(text, /s3cretpw/);
    assert.match(text, /postgres:\/\/baton@127\.0\.0\.1:1\/baton/, 'the hooks still name the database');
    const config = await baton(url, 'mcp', '--print-config', 'claude');
    assert.equal(config.code, 0, config.stderr);
    assert.doesNotMatch(config.stdout, /s3cretpw/);
  });

  test('refuses settings that are not JSON, and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-settings-'));
    mkdirSync(join(dir, '.claude'));
    const file = join(dir, '.claude', 'settings.json');
    writeFileSync(file, '{ "permissions": ');
    const r = await baton(join(dir, 'b.db'), 'hooks', 'install', 'claude', '--dir', dir);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /settings\.json is not valid JSON .*nothing was changed — fix the file/);
    assert.equal(readFileSync(file, 'utf8'), '{ "permissions": ');
    const other = await baton(join(dir, 'b.db'), 'hooks', 'install', 'vim', '--dir', dir);
    assert.equal(other.code, 2);
  });
});
