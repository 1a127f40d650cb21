/**
 * `baton up` hands a job its own dispatcher placed on its own host straight to its runner: the
 * run does not wait for the store's wake-up or the runner's `assigned` read (issue 22, item 3).
 * The store here has neither: its wake-ups refuse to wait, and the runner's `assigned` read never
 * answers until the test ends, so only the hand-off can start the job. On both engines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allDatabases } from '../../test/support/databases.js';
import { waitUntil } from '../../test/support/wait.js';
import type { Job } from '../core/job.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { systemClock } from './clock.js';
import { runUp, type UpOptions } from './up.js';

for (const db of allDatabases()) {
  test(`${db.name}: a job placed by its own dispatcher runs without a wake-up or an assigned read`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-handoff-'));
    const url = await db.fresh();
    const real = await openStore(url);
    let answer: (jobs: readonly Job[]) => void = () => undefined;
    const never = new Promise<readonly Job[]>((resolve) => (answer = resolve));
    const store: Store = {
      ...real,
      wakeups: { waiter: () => Promise.reject(new Error('no wake-ups in this test')) },
      dispatch: { ...real.dispatch, assigned: () => never },
    };
    const { job } = await real.jobs.enqueue({ key: 'k', command: 'true' });
    const options: UpOptions = {
      ...{ dbUrl: url, host: 'solo', leaseTtlMs: 15_000, retryIntervalMs: 100 },
      // A poll of an hour: the dispatcher places on gaining the lease, then only when woken.
      ...{ heartbeatIntervalMs: 500, staleAfterMs: 10_000, pollIntervalMs: 3_600_000 },
      ...{ recoveryIntervalMs: 3_600_000, slotsMax: 1, ramTotalMb: 1024, ramReservedMb: 0 },
      ...{ standby: false, agentCommand: null, logDir: join(dir, 'logs'), cwd: dir },
      containment: 'process-group',
    };
    const stop = new AbortController();
    const lines: string[] = [];
    const up = runUp(store, options, systemClock, (l) => lines.push(l), stop.signal);
    let types: string[] = [];
    try {
      await waitUntil(
        async () => (await real.jobs.get(job.id))?.status === 'done',
        60_000,
        `job ${job.id} to run to the end`,
      );
      types = (await real.audit.list({ jobId: job.id })).map((e) => e.type);
    } finally {
      answer([]);
      stop.abort();
      await up;
      await real.close();
    }
    // Placed, then started and finished under the placement's epoch, as after a poll.
    const path = types.filter((t) => ['job:placed', 'job:started', 'job:finished'].includes(t));
    assert.deepEqual(path, ['job:placed', 'job:started', 'job:finished'], lines.join('\n'));
  });
}

/**
 * A stop asked for before `runUp` is called (a closed stdout at `baton up`'s first lines, a signal
 * while the store opened) has fired its abort event already: `runUp` must still see it and return
 * without joining, rather than run until a second signal (decision 0057).
 */
test('sqlite: runUp given a stop asked for already returns without joining', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-early-stop-'));
  const url = `sqlite:${join(dir, 'baton.db')}`;
  const store = await openStore(url);
  try {
    const { job } = await store.jobs.enqueue({ key: 'k', command: 'true' });
    const options: UpOptions = {
      ...{ dbUrl: url, host: 'solo', leaseTtlMs: 15_000, retryIntervalMs: 100 },
      ...{ heartbeatIntervalMs: 500, staleAfterMs: 10_000, pollIntervalMs: 100 },
      ...{ recoveryIntervalMs: 3_600_000, slotsMax: 1, ramTotalMb: 1024, ramReservedMb: 0 },
      ...{ standby: false, agentCommand: null, logDir: join(dir, 'logs'), cwd: dir },
      containment: 'process-group',
    };
    const stop = new AbortController();
    stop.abort();
    const lines: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((done) => (timer = setTimeout(() => done('late'), 30_000)));
    const ended = await Promise.race([
      runUp(store, options, systemClock, (l) => lines.push(l), stop.signal).then(() => 'returned' as const),
      late,
    ]);
    clearTimeout(timer);
    assert.equal(ended, 'returned', `runUp ran on after its stop:\n${lines.join('\n')}`);
    assert.equal((await store.jobs.get(job.id))?.status, 'queued', 'a stopped runUp placed a job');
    assert.deepEqual(
      (await store.sessions.list()).filter((s) => s.state === 'live'),
      [],
      'a stopped runUp left a live session',
    );
  } finally {
    await store.close();
  }
});
