/**
 * The hooks' keeper gets its database in BATON_DB, never in its arguments: a Claude Code session
 * whose BATON_DB carries a PostgreSQL password starts a keeper that heartbeats with it, and the
 * keeper's /proc/<pid>/cmdline, which every uid of the machine reads, holds no password
 * (docs/security.md, "Secrets on the command line").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasPassword } from '../../core/redact.js';
import { openStore } from '../../store/open.js';
import { repoRoot } from '../../../test/support/cli.js';
import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { fakeClaude, keeperBeating } from '../../../test/support/fake-claude.js';
import { waitUntil } from '../../../test/support/wait.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');
const KEY = 'github:acme/api#33';
const server = postgresServers()[0];

/** The arguments of the live keepers whose environment names `stateDir`, joined by spaces. */
function keepersOf(stateDir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (line.includes('hook-keeper') && env.includes(`BATON_HOOK_STATE_DIR=${stateDir}`)) found.push(line);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

test(
  'a keeper started with a password in BATON_DB heartbeats, and its arguments hold no password',
  { skip: server === undefined ? 'no PostgreSQL server' : false },
  async () => {
    const db = await postgresDatabase(server ?? { name: '', url: '' }).fresh();
    assert.ok(hasPassword(db), `the test needs a URL with a password: ${db}`);
    const store = await openStore(db);
    const cwd = mkdtempSync(join(tmpdir(), 'baton-keeper-argv-'));
    const stateDir = join(cwd, '.state');
    let claude: ChildProcess | null = null;
    try {
      await store.tasks.add({ key: KEY, title: 'keeper argv' });
      const env = {
        PATH: process.env['PATH'],
        BATON_HOOK_STATE_DIR: stateDir,
        BATON_HOOK_HEARTBEAT_INTERVAL: '0.2',
        BATON_DB: db,
      };
      const input = JSON.stringify({
        session_id: 'cc-a',
        cwd,
        hook_event_name: 'SessionStart',
        source: 'startup',
      });
      claude = fakeClaude([process.execPath, BIN, 'hook', 'session-start', '--task', KEY], input, env);
      const session = await keeperBeating(store, KEY);
      const keepers = keepersOf(stateDir);
      assert.equal(keepers.length, 1, keepers.join('\n'));
      for (const keeper of keepers) {
        assert.match(keeper, new RegExp(`hook-keeper --session ${session}\\b`));
        assert.equal(hasPassword(keeper), false, `a password in the keeper's arguments: ${keeper}`);
      }
      claude.kill('SIGKILL');
      await waitUntil(async () => (await store.sessions.get(session))?.state === 'ended', 10_000, 'the end');
    } finally {
      claude?.kill('SIGKILL');
      await store.close();
    }
  },
);
