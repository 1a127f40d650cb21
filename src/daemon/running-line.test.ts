/**
 * `baton up`'s `running as session N` line (running-line.ts) waits for each of its loops: with the
 * first call of one loop held (the runner's heartbeat, its look for placed work, the elector's
 * first try at the lease, the dispatcher's first pass as leader), the others run on, and the line
 * comes only once the held call is let go. A line said at the join, or one that skipped a loop,
 * fails the case of that loop. In process, on a real store of both engines.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allDatabases } from '../../test/support/databases.js';
import { waitUntil } from '../../test/support/wait.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { systemClock } from './clock.js';
import { runUp, type UpOptions } from './up.js';

type Loop = 'heartbeat' | 'poll' | 'lease' | 'pass';

/** Counts each loop's calls into the store, and holds the first call of `held` until `release`. */
function gated(real: Store, held: Loop): { store: Store; calls: Record<Loop, number>; release: () => void } {
  const calls: Record<Loop, number> = { heartbeat: 0, poll: 0, lease: 0, pass: 0 };
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const wrap =
    <A extends unknown[], R>(loop: Loop, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      calls[loop] += 1;
      if (loop === held && calls[loop] === 1) await gate;
      return call(...args);
    };
  const store: Store = {
    ...real,
    hosts: { ...real.hosts, heartbeat: wrap('heartbeat', real.hosts.heartbeat.bind(real.hosts)) },
    dispatch: { ...real.dispatch, assigned: wrap('poll', real.dispatch.assigned.bind(real.dispatch)) },
    leases: {
      ...real.leases,
      acquire: wrap('lease', real.leases.acquire.bind(real.leases)),
      renew: wrap('lease', real.leases.renew.bind(real.leases)),
    },
    recovery: { ...real.recovery, rescueStale: wrap('pass', real.recovery.rescueStale.bind(real.recovery)) },
  };
  return { store, calls, release };
}

const LOOPS: readonly Loop[] = ['heartbeat', 'poll', 'lease', 'pass'];

for (const db of allDatabases()) {
  // Side by side: each case has its own database and its own `baton up` in this process.
  describe(`${db.name}: the running line`, { concurrency: true }, () => {
    for (const held of LOOPS) {
      test(`waits for the ${held} loop's first round`, async () => {
        const dir = mkdtempSync(join(tmpdir(), 'baton-running-'));
        const url = await db.fresh();
        const real = await openStore(url);
        const { store, calls, release } = gated(real, held);
        const options: UpOptions = {
          ...{ dbUrl: url, host: 'solo', leaseTtlMs: 3_000, retryIntervalMs: 100 },
          // A recovery pass on every dispatch pass: a second rescue call means a whole pass ran.
          ...{ heartbeatIntervalMs: 500, staleAfterMs: 10_000, pollIntervalMs: 100 },
          ...{ recoveryIntervalMs: 100, slotsMax: 1, ramTotalMb: 1024, ramReservedMb: 0 },
          ...{ standby: false, agentCommand: null, logDir: join(dir, 'logs'), cwd: dir },
          containment: 'process-group',
        };
        const stop = new AbortController();
        const lines: string[] = [];
        const running = (): number => lines.filter((l) => l.startsWith('running as session ')).length;
        const up = runUp(store, options, systemClock, (l) => lines.push(l), stop.signal);
        try {
          // The held call is in; every other loop has ended a round and begun the next (a pass as
          // leader needs the lease, so it never comes while the lease is held).
          const others = LOOPS.filter((loop) => loop !== held && !(held === 'lease' && loop === 'pass'));
          await waitUntil(
            () => calls[held] === 1 && others.every((loop) => calls[loop] >= 2),
            20_000,
            `the ${held} call held and the other loops round: ${JSON.stringify(calls)}`,
          );
          assert.equal(running(), 0, lines.join('\n'));
          release();
          await waitUntil(() => running() === 1, 20_000, `the running line: ${lines.join('\n')}`);
          assert.match(lines.find((l) => l.startsWith('running as session ')) ?? '', /\(the leader\)$/);
        } finally {
          release();
          stop.abort();
          await up;
          await real.close();
        }
        assert.equal(running(), 1, 'said once');
        const join_ = lines.findIndex((l) => l.startsWith('joined as session '));
        assert.ok(join_ >= 0 && join_ < lines.findIndex((l) => l.startsWith('running as session ')));
      });
    }
  });
}
