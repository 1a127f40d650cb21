/**
 * Regression, found by the chaos suite (a dropped reply on PostgreSQL): the runner's `jobs.start`
 * committed but its answer was lost, the run gave up, and the job stayed `running` under the
 * runner's live session with no agent. Recovery only rescues dead sessions, so nobody ever moved
 * it again, and the workspace lock it held kept every later exclusive run waiting. A run that
 * fails on the store now gives its job back to the queue, guarded by its epoch. Since the start
 * commits with the agent's session and claim, the lost answer also hid that session, whose claim
 * refused the next attempt ('task held'): the give-back ends it first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../../src/daemon/clock.js';
import { runUp, type UpOptions } from '../../src/daemon/up.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';

test('a job whose start committed but whose answer was lost is given back and runs to the end', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-lost-start-'));
  const real = await openStore(join(dir, 'baton.db'));
  let lost = 0;
  // A run's start goes with its agent's session and claim (store.runs.begin): all three committed,
  // the answer lost, so the run never learns the session that holds the task's claim.
  const store: Store = {
    ...real,
    runs: {
      begin: async (p) => {
        const r = await real.runs.begin(p);
        if (lost++ > 0) return r;
        throw new StoreUnavailableError('cannot use PostgreSQL: Connection terminated unexpectedly');
      },
    },
  };
  // The give-back is the runner's own, not a rescue: a stale threshold far above the heartbeat keeps
  // a loaded machine's pause from also declaring the session stale (a third attempt).
  const options: UpOptions = {
    ...{ dbUrl: join(dir, 'baton.db'), host: 'solo', leaseTtlMs: 900, retryIntervalMs: 100 },
    ...{ heartbeatIntervalMs: 100, staleAfterMs: 5000, pollIntervalMs: 100, recoveryIntervalMs: 100 },
    ...{ slotsMax: 1, ramTotalMb: 1024, ramReservedMb: 0, standby: false, agentCommand: null },
    ...{ logDir: join(dir, 'logs'), cwd: dir },
  };
  const stop = new AbortController();
  const lines: string[] = [];
  const up = runUp(store, options, systemClock, (l) => lines.push(l), stop.signal);
  const { job } = await real.jobs.enqueue({ key: 'k', command: 'true' });
  let status = job.status;
  for (let i = 0; i < 200 && status !== 'done'; i++) {
    await sleep(50);
    status = (await real.jobs.get(job.id))?.status ?? status;
  }
  stop.abort();
  await up;
  const final = await real.jobs.get(job.id);
  await real.close();
  assert.equal(final?.status, 'done', `the job is ${final?.status ?? '?'}:\n${lines.join('\n')}`);
  assert.equal(final?.attempt, 2, 'given back once, then run');
});
