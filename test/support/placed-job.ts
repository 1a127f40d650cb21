/**
 * A job placed by a dispatcher's leader on host `box-1`, served by its runner session: the start
 * of the runner's own steps (beginRun, AgentRun) for the daemon's tests.
 */
import assert from 'node:assert/strict';
import type { Job } from '../../src/core/job.js';
import type { Session } from '../../src/core/session.js';
import type { TermRef } from '../../src/store/dispatch-store.js';
import type { Store } from '../../src/store/store.js';

/** Host box-1 served by a runner session with room on it, and a leader `holder`'s dispatcher term. */
export async function servedBox1(
  store: Store,
  holder = 'leader',
): Promise<{ readonly runner: Session; readonly term: TermRef }> {
  const runner = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1 });
  await store.hosts.register({
    name: 'box-1',
    session: runner.id,
    enabled: true,
    ramTotalMb: 8000,
    ramReservedMb: 0,
    ramFreeMb: 8000,
    slotsMax: 4,
  });
  const lease = await store.leases.acquire({ name: 'dispatcher', holder, ttlMs: 60_000 });
  assert.ok(lease.ok);
  return { runner, term: { lease: 'dispatcher', holder, term: lease.lease.term } };
}

export async function placedOnBox1(
  store: Store,
  key: string,
  workspace?: string,
): Promise<{ readonly runner: Session; readonly queued: Job; readonly job: Job; readonly term: TermRef }> {
  const { runner, term } = await servedBox1(store);
  const { job: queued } = await store.jobs.enqueue({ key });
  const placed = await store.dispatch.place({ id: queued.id, host: 'box-1', term, workspace });
  assert.ok(placed.ok);
  return { runner, queued, job: placed.job, term };
}
