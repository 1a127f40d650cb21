/**
 * A drain that begins while the database refuses every call (decision 0034, review fixes): the
 * host cannot be marked draining at SIGTERM, so the start line says it is not marked (yet), and
 * the runner's poll marks it once the database answers again, while the agent still runs; the
 * drain then ends as usual. The outage is shorter than the runner's trust window, so nothing is
 * fenced.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../../src/daemon/clock.js';
import { runUp, type UpOptions } from '../../src/daemon/up.js';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { agentStarted } from '../e2e/cluster-support.js';
import { waitUntil } from '../support/wait.js';
import { flaky, network } from './flaky-store.js';

for (const db of bothEngines()) {
  describe(`${db.name}: a drain begun with the database down`, () => {
    test('marks the host once the database answers again, while the agent runs', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'baton-drain-mark-'));
      const url = await db.fresh();
      const real = await openStore(url);
      const net = network();
      const go = join(dir, 'go');
      const options: UpOptions = {
        dbUrl: url,
        host: 'solo',
        leaseTtlMs: 2000,
        retryIntervalMs: 200,
        heartbeatIntervalMs: 500,
        staleAfterMs: 10_000, // a trust window of 9 s: the 2 s outage fences nothing
        pollIntervalMs: 200,
        recoveryIntervalMs: 500,
        slotsMax: 1,
        ramTotalMb: 1024,
        ramReservedMb: 0,
        standby: false,
        agentCommand: null,
        logDir: join(dir, 'logs'),
        cwd: dir,
        drainMs: 60_000,
      };
      const lines: string[] = [];
      const stop = new AbortController();
      try {
        const command = `for i in $(seq 600); do test -e '${go}' && exit 0; sleep 0.1; done; exit 1`;
        const { job } = await real.jobs.enqueue({ key: 'a', command });
        const up = runUp(flaky(real, net), options, systemClock, (line) => lines.push(line), stop.signal);
        const log = (): string => lines.join('\n');
        await waitUntil(async () => agentStarted(real, 'a'), 15_000, 'the agent to start');
        net.mode = 'refuse';
        stop.abort(); // SIGTERM
        await waitUntil(() => /^draining: 1 run\(s\) to finish/m.test(log()), 10_000, 'the drain to start');
        assert.match(log(), /^draining: could not mark host solo draining \(tried again while it drains\)/m);
        assert.match(log(), /host solo not marked draining \(yet\)/);
        assert.doesNotMatch(log(), /already disabled/);
        await sleep(1000);
        net.release();
        await waitUntil(() => /^draining: host solo marked draining$/m.test(log()), 10_000, log());
        const host = (await real.hosts.list()).find((one) => one.name === 'solo');
        assert.deepEqual([host?.enabled, host?.draining], [false, true], 'marked while the agent runs');
        writeFileSync(go, '');
        await up;
        assert.match(log(), /drained: every run ended/);
        assert.equal((await real.jobs.get(job.id))?.status, 'done', log());
      } finally {
        stop.abort();
        net.release();
        writeFileSync(go, '');
        await real.close();
      }
    });
  });
}
