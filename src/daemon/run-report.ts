/**
 * The end of one agent run (agent-run.ts): what the runner saw (why it killed the agent, how the
 * agent exited, the OOM counts and the peak RSS) judged by core/run-verdict.ts, then applied to
 * the job and the claim in the store: finished, requeued under the retry policy, or left to whoever
 * ended it meanwhile. Runs after the agent's tree is dead and its worktree retired.
 */
import type { Job } from '../core/job.js';
import { judgeRun, type KillReason } from '../core/run-verdict.js';
import { readOomKills } from '../os/memory.js';
import type { AgentProcess } from './agent-process.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { withLogProblem } from './job-log.js';

export type Guard = { id: number; session: number; epoch: number };
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** What the run saw, gathered by the run while it watched its agent. */
export interface RunEnd {
  readonly exit: Exit;
  /** The machine's OOM kill count before the agent was spawned (null where it cannot be read). */
  readonly oomBefore: number | null;
  readonly agentSession: number;
  readonly claimEpoch: number;
  readonly guard: Guard;
  readonly killedFor: KillReason | null;
  /** Whether the run's runner fenced itself while it ran (agent-run.ts runnerFenced). */
  readonly runnerFenced: boolean;
  readonly oomKills: number;
  readonly peakRssMb: number;
  /** Whether the job's scope counts its own OOM kills (a cgroup with a memory controller). */
  readonly scopeCountsOom: boolean;
  /** Why a stalled run was stopped, when it was (run-progress.ts). */
  readonly stallReason: string | null;
  /** Why a run past its time limit was stopped, when it was (run-limit.ts). */
  readonly timeoutReason: string | null;
  readonly agent: AgentProcess | null;
}

/** Judges the run and writes its outcome: the job's end (or requeue) and the claim's release. */
export async function reportRun(options: AgentRunOptions, job: Job, end: RunEnd): Promise<void> {
  const { store } = options;
  const { exit, oomBefore, agentSession, claimEpoch, guard, agent } = end;
  const release = (outcome: 'done' | 'failed' | 'released') =>
    store.claims.release({ key: job.key, session: agentSession, epoch: claimEpoch, outcome });
  const log = (line: string): void => options.log(`job ${job.id} ${job.key}: ${line}`);
  const verdict = judgeRun({
    killedFor: end.killedFor,
    runnerFenced: end.runnerFenced,
    exit,
    oomInScope: end.oomKills > 0,
    oomOnMachine:
      !end.scopeCountsOom &&
      exit.signal === 'SIGKILL' &&
      oomBefore !== null &&
      (readOomKills() ?? 0) > oomBefore,
    peakRssMb: end.peakRssMb,
    budgetMb: job.ramMb,
    containment: options.containment.kind,
    stallReason: end.stallReason,
    timeoutReason: end.timeoutReason,
  });
  if (verdict.kind === 'leave') {
    if (verdict.release !== null) await release(verdict.release);
    return log(verdict.log);
  }
  if (verdict.kind === 'requeue') {
    const result = await store.dispatch.requeue({
      ...guard,
      reason: withLogProblem(verdict.reason, agent?.logProblem() ?? null) ?? verdict.reason,
      policy: options.policy,
      attemptCounts: verdict.attemptCounts,
    });
    await release(verdict.release);
    return log(`${verdict.reason}; ${result.ok ? result.job.status : 'lost'}`);
  }
  const finished = await store.jobs.finish({
    ...guard,
    status: verdict.status,
    exitCode: verdict.exitCode,
    reason: withLogProblem(verdict.reason, agent?.logProblem() ?? null),
    outputTail: verdict.keepTail ? (agent?.tail() ?? '') : null,
  });
  if (!finished.ok) {
    // Ended meanwhile: the agent escalated the task (`baton escalate`, which ended the claim
    // too), or the task was closed or finished and its job cancelled.
    const why = finished.job === null ? 'gone' : `${finished.job.status}: ${finished.job.reason ?? ''}`;
    await release('released');
    return log(`agent exited ${exit.code ?? exit.signal ?? '?'}, job already ${why}`);
  }
  await release(verdict.release);
  log(verdict.log);
}

/**
 * A run held back before its spawn (its runner stopped, drained or was fenced: agent-run.ts
 * holdBack): the job queued again, its attempt given back (no agent ran), the claim let go; under
 * a fence nothing is written, the job is the leader's rescue's. An agent spawned meanwhile
 * is killed as soon as it is, and its end requeued as a stop's (run-verdict.ts).
 */
export async function reportNotStarted(
  options: AgentRunOptions,
  job: Job,
  why: 'shutdown' | 'fenced',
  guard: Guard,
  agentSession: number,
  claimEpoch: number,
): Promise<void> {
  const { store, policy } = options;
  if (why === 'fenced') return options.log(`job ${job.id} ${job.key}: not started, fenced`);
  const reason = 'runner stopping: its agent was not started';
  const result = await store.dispatch.requeue({ ...guard, reason, policy, attemptCounts: false });
  const claim = { key: job.key, session: agentSession, epoch: claimEpoch };
  await store.claims.release({ ...claim, outcome: 'released' });
  options.log(`job ${job.id} ${job.key}: ${reason}; ${result.ok ? result.job.status : 'lost'}`);
}
