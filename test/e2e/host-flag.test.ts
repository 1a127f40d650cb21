/**
 * Issue 14, item 6: an operator's `baton host enable|disable` survives the host's rejoins and
 * restarts, with real `baton up` processes on both engines. `--standby` sets the flag only when
 * given, on the process's first join.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { bothEngines } from '../support/databases.js';
import { clusterFixture, FAST, pauseOutsideWriteLock } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

const joins = (log: string): number => log.split('\n').filter((l) => l.includes('joined as session')).length;

for (const db of bothEngines()) {
  describe(`${db.name}: the host's enabled flag`, () => {
    test('a standby enabled by an operator stays enabled when it rejoins after being declared stale, and a disable survives a restart', async () => {
      const c = await clusterFixture(db);
      try {
        const enabled = async (): Promise<boolean | undefined> =>
          (await c.store.hosts.list()).find((h) => h.name === 'b')?.enabled;
        const a = c.up('a');
        await a.waitForLog(/leading the dispatcher/);
        const b = c.up('b', '--standby');
        await b.waitForLog(/joined as session .* \(standby, as --standby asks/);
        await b.waitRunning(); // paused below once its loops run, not in the middle of its join
        assert.equal(await enabled(), false);
        assert.equal((await c.baton('host', 'enable', 'b')).code, 0);

        pauseOutsideWriteLock(db, c.url, b);
        // Past the stale threshold and a recovery pass: the leader rescues b's session.
        await sleep(FAST.staleMs + 2_000);
        b.signal('SIGCONT');
        await waitUntil(() => joins(b.log()) >= 2, 15_000, 'b to rejoin');
        // Fenced off either way: the leader declared it stale, or its own watchdog saw its
        // heartbeats stop first (each cause has its own words since issue 14, item 12).
        assert.match(b.log(), /declared stale|no heartbeat of this host reached the database/);
        assert.equal(await enabled(), true, `the rejoin kept the operator's enable\n${b.log()}`);

        assert.equal((await c.baton('host', 'disable', 'b')).code, 0);
        b.signal('SIGKILL');
        await b.exited();
        const again = c.up('b');
        await again.waitForLog(/joined as session .* \(disabled by an operator/, 20_000);
        assert.equal(await enabled(), false, "the restart kept the operator's disable");
      } finally {
        await c.close();
      }
    });
  });
}
