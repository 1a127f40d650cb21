/**
 * Regression, found by the chaos suite (a dropped reply on PostgreSQL): the runner's `jobs.start`
 * committed but its answer was lost, the run gave up, and the job stayed `running` under the
 * runner's live session with no agent. Recovery only rescues dead sessions, so nobody ever moved
 * it again, and the workspace lock it held kept every later exclusive run waiting. A run that
 * fails on the store now gives its job back to the queue, guarded by its epoch. Since the start
 * commits with the agent's session and claim, the lost answer also hid that session, whose claim
 * refused the next attempt ('task held'): the give-back ends it first. A job placed by its own
 * runner (runs.placeAndBegin) is given back the same way, under the epoch that placement made.
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

// A run's start goes with its agent's session and claim (store.runs.begin), and with the job's
// placement when the placing dispatcher is this runner's (store.runs.placeAndBegin, `merged`; the
// other case makes that call place nothing, so the dispatcher places the job and the run begins
// it): all committed, the answer lost, so the run never learns the session that holds the claim.
for (const merged of [true, false])
  test(`a job whose start committed but whose answer was lost is given back and runs to the end (${
    merged ? 'placed and begun in one call' : 'begun after its placement'
  })`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-lost-start-'));
    const real = await openStore(join(dir, 'baton.db'));
    const lostIn: string[] = [];
    const losing =
      <P, R>(name: string, call: (params: P) => Promise<R>) =>
      async (params: P): Promise<R> => {
        const answer = await call(params);
        if (lostIn.length > 0) return answer;
        lostIn.push(name);
        throw new StoreUnavailableError('cannot use PostgreSQL: Connection terminated unexpectedly');
      };
    const store: Store = {
      ...real,
      runs: {
        begin: losing('begin', (params) => real.runs.begin(params)),
        placeAndBegin: merged
          ? losing('placeAndBegin', (params) => real.runs.placeAndBegin(params))
          : () => Promise.resolve({ placed: false }),
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
    assert.deepEqual(lostIn, [merged ? 'placeAndBegin' : 'begin'], "the answer lost was that call's");
  });
