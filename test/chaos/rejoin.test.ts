/**
 * Regression, found by the chaos suite on PostgreSQL: a `baton up` whose heartbeats failed past
 * its trust window while the database was restarting was fenced, tried to rejoin at once, and
 * exited (code 5) when the database was still unreachable, or (code 3) when the database was
 * back but still listed its old session as serving the host. With one host nobody ever rescued
 * that old session, so even a supervisor restarting the process could not bring it back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../../src/daemon/clock.js';
import { runUp, type UpOptions } from '../../src/daemon/up.js';
import { openStore } from '../../src/store/open.js';
import { flaky, network } from './flaky-store.js';

test('a lone baton up fenced by a database outage rejoins once the database is back, instead of exiting', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-rejoin-'));
  const real = await openStore(join(dir, 'baton.db'));
  const net = network();
  const options: UpOptions = {
    dbUrl: join(dir, 'baton.db'),
    host: 'solo',
    leaseTtlMs: 600,
    retryIntervalMs: 100,
    heartbeatIntervalMs: 100,
    staleAfterMs: 500,
    pollIntervalMs: 100,
    recoveryIntervalMs: 100,
    slotsMax: 1,
    ramTotalMb: 1024,
    ramReservedMb: 0,
    standby: false,
    agentCommand: null,
    logDir: join(dir, 'logs'),
    cwd: dir,
  };
  const lines: string[] = [];
  const stop = new AbortController();
  const up = runUp(flaky(real, net), options, systemClock, (l) => lines.push(l), stop.signal);
  const joined = () => lines.filter((l) => l.startsWith('joined as session')).length;
  while (joined() < 1) await sleep(20);
  net.mode = 'refuse'; // longer than the runner's trust window (stale-after minus two beats)
  await sleep(1200);
  net.release();
  for (let i = 0; i < 100 && joined() < 2; i++) await sleep(50);
  stop.abort();
  await up; // resolves: it did not exit
  assert.equal(joined(), 2, lines.join('\n'));
  assert.ok(
    lines.some((l) => l.startsWith('cannot rejoin yet')),
    lines.join('\n'),
  );
  const [first, second] = await real.sessions.list();
  assert.equal(first?.state, 'ended', 'the fenced session was ended on rejoin');
  assert.equal(second?.state, 'ended', 'the new one at the clean stop');
  await real.close();
});
