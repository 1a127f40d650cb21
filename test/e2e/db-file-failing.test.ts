/**
 * A SQLite file that fails under a running `baton up` (made immutable: writes fail as `disk I/O
 * error`). Its runner and dispatcher logged that every poll, unthrottled (only the database being
 * unreachable was throttled), against README's "at most one line per 30 s"; and its exit said
 * `baton: disk I/O error — run again with BATON_DEBUG=1`, naming no file. Now one line per loop,
 * and a stop names the file and exits 5. `chattr +i` needs root on a file system that has it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture } from './cluster-support.js';

/** Sets or clears the immutable attribute; false where it cannot. */
function immutable(files: readonly string[], on: boolean): boolean {
  try {
    execFileSync('chattr', [on ? '+i' : '-i', ...files], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('an immutable SQLite file: one runner line, not one a poll; the stop names the file, exit 5', async (t) => {
  const c = await clusterFixture(sqliteDatabase());
  const files = [c.url, `${c.url}-wal`];
  try {
    await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
    // A long --stale-after: the runner trusts itself through the failures instead of fencing.
    const up = c.up('solo', '--stale-after', '60', '--drain', '1s');
    await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
    if (!immutable(files, true))
      return t.skip('chattr +i is not possible here (needs root and ext4 or alike)');
    const lines = (pattern: RegExp): string[] =>
      up
        .log()
        .split('\n')
        .filter((line) => pattern.test(line));
    await up.waitForLog(/ runner: disk I\/O error/);
    // 6 s more: the runner's heartbeat (0.5 s) and poll (0.5 s) fail a dozen times or more.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.equal(lines(/ runner: /).length, 1, up.log());
    assert.ok(lines(/ dispatch failed: /).length <= 1, up.log());
    up.signal('SIGTERM');
    await up.exited();
    const log = up.log();
    assert.equal(up.child.exitCode, 5, log);
    assert.doesNotMatch(log, /left the cluster|BATON_DEBUG/, log);
    const file = c.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(log, new RegExp(`^baton: .*${file}: disk I/O error`, 'm'), log);
  } finally {
    immutable(files, false);
    await c.close();
  }
});
