/**
 * The hooks' keeper over the HTTP API (decision 0051, review fixes): a Claude Code session the
 * hooks started with BATON_URL and BATON_TOKEN (no BATON_SESSION, no --db) keeps heartbeating
 * through a real `baton serve`, so it keeps its claim.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Coordinator } from '../../coordinator/coordinator.js';
import { openStore } from '../../store/open.js';
import { repoRoot } from '../../../test/support/cli.js';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { fakeClaude, keeperBeating } from '../../../test/support/fake-claude.js';
import { waitUntil } from '../../../test/support/wait.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');
const KEY = 'github:acme/api#32';

test('the keeper a hook started over HTTP heartbeats its session through baton serve', async () => {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  const cwd = mkdtempSync(join(tmpdir(), 'baton-keeper-http-'));
  const server = spawn(process.execPath, [BIN, '--db', db, 'serve', '--http', '127.0.0.1:0'], {
    env: { PATH: process.env['PATH'] },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  server.stdout.on('data', (d: Buffer) => (out += d.toString()));
  server.stderr.on('data', (d: Buffer) => (out += d.toString()));
  let claude: ChildProcess | null = null;
  try {
    await store.tasks.add({ key: KEY, title: 'keeper over HTTP' });
    const token = (await new Coordinator(store).tokens.create({ scope: 'operator' })).secret;
    let url = '';
    await waitUntil(
      () => (url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '') !== '',
      15_000,
      'the URL',
    );
    const env = {
      PATH: process.env['PATH'],
      BATON_HOOK_STATE_DIR: join(cwd, '.state'),
      BATON_HOOK_HEARTBEAT_INTERVAL: '0.2',
      BATON_URL: url,
      BATON_TOKEN: token,
    };
    const input = JSON.stringify({
      session_id: 'cc-h',
      cwd,
      hook_event_name: 'SessionStart',
      source: 'startup',
    });
    // As the installed hooks run it: a default database baked in, which BATON_URL overrides.
    const hook = [process.execPath, BIN, 'hook', 'session-start', '--default-db', db, '--task', KEY];
    claude = fakeClaude(hook, input, env);
    const session = await keeperBeating(store, KEY);
    assert.equal((await store.tasks.get(KEY))?.holder?.session, session, 'the claim is kept');
    // Claude Code dies unannounced: the keeper, still running over HTTP, ends the session.
    claude.kill('SIGKILL');
    await waitUntil(async () => (await store.sessions.get(session))?.state === 'ended', 10_000, 'the end');
    assert.equal((await store.tasks.get(KEY))?.holder, null);
  } finally {
    claude?.kill('SIGKILL');
    server.kill('SIGTERM');
    await store.close();
  }
});
