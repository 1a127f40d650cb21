/**
 * The one suite every engine must pass, unchanged. A change to store.ts or to either engine
 * comes with a change here.
 */
import { describe } from 'node:test';
import { exerciseActors } from './actors.js';
import { exerciseAttempts } from './attempts.js';
import { exerciseAuditAndMigrations } from './audit-migrations.js';
import { exerciseClaims } from './claims.js';
import { exerciseRunBegin } from './run-begin.js';
import { exerciseContainment } from './containment.js';
import { exerciseDispatch } from './dispatch.js';
import { exerciseDispatchPass } from './dispatch-pass.js';
import { exerciseAgentCommand } from './agent-command.js';
import { exerciseDependencies } from './dependencies.js';
import { exerciseEffects } from './effects.js';
import { exerciseForceRelease } from './force-release.js';
import type { Harness } from './harness.js';
import { exerciseHandOff } from './hand-off.js';
import { exerciseHostDrain } from './host-drain.js';
import { exerciseHostRetire } from './host-retire.js';
import { exerciseHostLoad } from './host-load.js';
import { exerciseJobs } from './jobs.js';
import { exerciseJobLoop } from './jobs-loop.js';
import { exerciseJobBatch } from './jobs-batch.js';
import { exerciseLeases } from './leases.js';
import { exerciseProgress } from './progress.js';
import { exerciseRunLimit } from './run-limit.js';
import { exercisePullTimeLimit } from './pull-time-limit.js';
import { exerciseTimeLimitSweep } from './time-limit-sweep.js';
import { exerciseJobList } from './job-list.js';
import { exerciseLifecycle } from './lifecycle.js';
import { exerciseFeedback } from './feedback.js';
import { exerciseHumanSessions } from './human-sessions.js';
import { exerciseNext } from './next.js';
import { exerciseOrphanReasons } from './orphan-reasons.js';
import { exerciseObserve } from './observe.js';
import { exerciseObserveTotals } from './observe-totals.js';
import { exerciseObserveRetention } from './observe-retention.js';
import { exerciseObserveKept } from './observe-kept.js';
import { exerciseTaskPage } from './task-page.js';
import { exerciseGithub } from './github.js';
import { exerciseLedger } from './ledger.js';
import { exerciseSessionEnds } from './session-ends.js';
import { exerciseSessionReport } from './session-report.js';
import { exerciseTasksAndSessions } from './tasks-sessions.js';
import { exerciseWorkspaceDispatch } from './workspace-dispatch.js';
import { exerciseWorkspaces } from './workspaces.js';
import { exerciseWakeups } from './wakeups.js';
import { exerciseTokens } from './tokens.js';
import { exerciseSignIns } from './sign-ins.js';
import { exerciseOutput } from './output.js';
import { exerciseOutputTrim } from './output-trim.js';
import { exerciseRetention } from './retention.js';
import { exerciseUnqueued } from './unqueued.js';

export type { Harness, Fixture, RawSql } from './harness.js';

/**
 * Every case may start at once; withFixture (harness.ts) lets four hold a database at a time.
 */
export function exerciseStore(harness: Harness): void {
  // Nested describes inherit it.
  void describe(`${harness.name} store`, { concurrency: true }, () => {
    exerciseTasksAndSessions(harness);
    exerciseUnqueued(harness);
    exerciseClaims(harness);
    exerciseJobs(harness);
    exerciseJobLoop(harness);
    exerciseHandOff(harness);
    exerciseJobBatch(harness);
    exerciseLeases(harness);
    exerciseAuditAndMigrations(harness);
    exerciseDispatch(harness);
    exerciseDispatchPass(harness);
    exerciseAgentCommand(harness);
    exerciseHostLoad(harness);
    exerciseHostDrain(harness);
    exerciseHostRetire(harness);
    exerciseAttempts(harness);
    exerciseOrphanReasons(harness);
    exerciseRunBegin(harness);
    exerciseEffects(harness);
    exerciseProgress(harness);
    exerciseRunLimit(harness);
    exercisePullTimeLimit(harness);
    exerciseTimeLimitSweep(harness);
    exerciseJobList(harness);
    exerciseWorkspaces(harness);
    exerciseWorkspaceDispatch(harness);
    exerciseWakeups(harness);
    exerciseContainment(harness);
    exerciseLifecycle(harness);
    exerciseFeedback(harness);
    exerciseForceRelease(harness);
    exerciseHumanSessions(harness);
    exerciseNext(harness);
    exerciseDependencies(harness);
    exerciseLedger(harness);
    exerciseSessionEnds(harness);
    exerciseSessionReport(harness);
    exerciseObserve(harness);
    exerciseRetention(harness);
    exerciseObserveTotals(harness);
    exerciseObserveRetention(harness);
    exerciseObserveKept(harness);
    exerciseTaskPage(harness);
    exerciseTokens(harness);
    exerciseSignIns(harness);
    exerciseGithub(harness);
    exerciseActors(harness);
    exerciseOutput(harness);
    exerciseOutputTrim(harness);
  });
}
