/**
 * A small fleet in the database for the dashboard's views: two hosts (one on standby), a leader,
 * a running job whose agent holds its task's claim and a workspace, a run waiting for that
 * workspace, a job too big for any host, a failed job, and the running job's output on disk.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitingForWorkspace } from '../../src/core/workspace-lock.js';
import type { Store } from '../../src/store/store.js';

export interface Seeded {
  readonly runningJob: number;
  readonly agentSession: number;
}

export async function seedFleet(store: Store, logDir: string): Promise<Seeded> {
  const daemon = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 4100, name: 'baton up' });
  const host = (name: string, session: number, enabled: boolean) =>
    store.hosts.register({
      name,
      session,
      enabled,
      ramTotalMb: 32_000,
      ramReservedMb: 2_000,
      ramFreeMb: 20_000,
      slotsMax: 4,
    });
  await host('box-1', daemon.id, true);
  // Live for the whole test: a disabled host is shown as a warm standby only while its runner is.
  const standby = await store.sessions.start({ kind: 'daemon', host: 'box-2', pid: 4200, ttlMs: 3_600_000 });
  await host('box-2', standby.id, false);
  const lease = await store.leases.acquire({
    name: 'dispatcher',
    holder: String(daemon.id),
    ttlMs: 3_600_000,
  });
  assert.ok(lease.ok);
  const term = { lease: 'dispatcher', holder: String(daemon.id), term: lease.lease.term };

  const worker = await store.sessions.start({ kind: 'agent', host: 'laptop', pid: 777 });
  const failed = await store.jobs.enqueue({ key: 'linear:ENG-88', command: 'npm run lint' });
  const taken = await store.jobs.claimNext({ session: worker.id, start: true });
  assert.ok(taken !== null && taken.id === failed.job.id);
  await store.jobs.finish({
    id: taken.id,
    session: worker.id,
    epoch: taken.epoch,
    status: 'failed',
    exitCode: 2,
    reason: 'exit code 2',
    outputTail: 'src/a.ts:3 unused variable\n',
  });

  await store.workspaces.add({ name: 'api', path: '/srv/api', kind: 'dir' });
  const { job } = await store.jobs.enqueue({
    key: 'github:acme/api#12',
    ramMb: 2048,
    command: 'claude -p "{{title}}"',
  });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term, workspace: 'api' });
  assert.ok(placed.ok, 'placed');
  assert.ok((await store.jobs.start({ id: job.id, session: daemon.id, epoch: placed.job.epoch })).ok);
  const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 4321, name: 'claude' });
  assert.ok(
    (
      await store.dispatch.attach({
        id: job.id,
        session: daemon.id,
        epoch: placed.job.epoch,
        agentSession: agent.id,
        pid: 4321,
      })
    ).ok,
  );
  assert.ok((await store.claims.acquire({ key: job.key, session: agent.id })).ok);
  mkdirSync(logDir, { recursive: true });
  writeFileSync(
    join(logDir, `job-${job.id}-attempt-1.log`),
    'reading src/api.ts\nrunning npm test\n  42 passing\n',
  );

  const waiting = await store.jobs.enqueue({ key: 'github:acme/api#13', ramMb: 1024 });
  const lock = await store.workspaceLocks.current('api');
  assert.ok(lock !== null);
  const holder = {
    session: lock.session,
    host: 'box-1',
    jobId: lock.jobId,
    since: lock.acquiredAt,
    epoch: lock.epoch,
  };
  assert.ok(
    await store.dispatch.markWaiting({
      id: waiting.job.id,
      reason: waitingForWorkspace('api', holder),
      term,
    }),
  );
  const big = await store.jobs.enqueue({ key: 'github:acme/web#7', ramMb: 64_000 });
  assert.ok(
    await store.dispatch.markWaiting({
      id: big.job.id,
      reason: 'needs 64000 MB; the most free is 18000 MB on box-1',
      term,
    }),
  );

  return { runningJob: job.id, agentSession: agent.id };
}
