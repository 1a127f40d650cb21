/**
 * The one suite every engine must pass, unchanged. A change to store.ts or to either engine
 * comes with a change here.
 */
import { describe } from 'node:test';
import { exerciseAuditAndMigrations } from './audit-migrations.js';
import { exerciseClaims } from './claims.js';
import { exerciseContainment } from './containment.js';
import { exerciseDispatch } from './dispatch.js';
import { exerciseEffects } from './effects.js';
import { exerciseForceRelease } from './force-release.js';
import type { Harness } from './harness.js';
import { exerciseHostLoad } from './host-load.js';
import { exerciseJobs } from './jobs.js';
import { exerciseJobLoop } from './jobs-loop.js';
import { exerciseLeases } from './leases.js';
import { exerciseProgress } from './progress.js';
import { exerciseLifecycle } from './lifecycle.js';
import { exerciseHumanSessions } from './human-sessions.js';
import { exerciseNext } from './next.js';
import { exerciseObserve } from './observe.js';
import { exerciseLedger } from './ledger.js';
import { exerciseTasksAndSessions } from './tasks-sessions.js';
import { exerciseWorkspaceDispatch } from './workspace-dispatch.js';
import { exerciseWorkspaces } from './workspaces.js';
import { exerciseWakeups } from './wakeups.js';

export type { Harness, Fixture, RawSql } from './harness.js';

export function exerciseStore(h: Harness): void {
  void describe(`${h.name} store`, () => {
    exerciseTasksAndSessions(h);
    exerciseClaims(h);
    exerciseJobs(h);
    exerciseJobLoop(h);
    exerciseLeases(h);
    exerciseAuditAndMigrations(h);
    exerciseDispatch(h);
    exerciseHostLoad(h);
    exerciseEffects(h);
    exerciseProgress(h);
    exerciseWorkspaces(h);
    exerciseWorkspaceDispatch(h);
    exerciseWakeups(h);
    exerciseContainment(h);
    exerciseLifecycle(h);
    exerciseForceRelease(h);
    exerciseHumanSessions(h);
    exerciseNext(h);
    exerciseLedger(h);
    exerciseObserve(h);
  });
}
