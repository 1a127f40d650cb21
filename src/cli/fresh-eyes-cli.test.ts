/**
 * End-to-end tests of what a fresh-eyes walk through Baton found: host names with spaces, a
 * dead standby counted as a ready one. Real databases, the real `baton` command.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import { localOnly, repoRoot, stopServers, type Run } from '../../test/support/cli.js';
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

/** Registers host `name` for a daemon session of its own, disabled or not; ends that session when `down`. */
async function hostOf(db: string, name: string, enabled: boolean, down: boolean): Promise<void> {
  const store = await openStore(db, { intent: 'use' });
  try {
    const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1, ttlMs: 3_600_000 });
    await store.hosts.register({
      name,
      session: session.id,
      enabled,
      ramTotalMb: 8_000,
      ramReservedMb: 512,
      ramFreeMb: 8_000,
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
  });
});
