/**
 * Why a queued job waits, said at read time when the dispatcher has not written it
 * (docs/decisions/0035-task-dependencies.md, "Why held jobs wait"): a pass writes reasons only
 * for the held jobs among the first `batchMax` queued, so a job of a gated or blocked task behind
 * them read no reason. Here a queued job without a reason whose task is open and behind a gate or
 * a dependency not done is given the reason the dispatcher would write (gateReason,
 * blockedReason), from one read of those tasks (observe.taskHolds); nothing is written, and the
 * dispatcher's tick is unchanged. A stored reason is kept as it is. Likewise a job without a
 * command, while no live host has an agent command, is given WAITING_FOR_AGENT_COMMAND (decision
 * 0047), from one more read.
 */
import { WAITING_FOR_AGENT_COMMAND } from '../core/capacity.js';
import { blockedReason, gateReason } from '../core/dispatch-plan.js';
import type { Job } from '../core/job.js';
import type { Store } from '../store/store.js';

const unexplained = (job: Job): boolean => job.status === 'queued' && job.reason === null;

/** The jobs, each queued one without a reason given the reason its task holds it by, if any. */
export async function withHeldReasons(store: Store, jobs: readonly Job[]): Promise<readonly Job[]> {
  const keys = [...new Set(jobs.filter(unexplained).map((job) => job.key))];
  if (keys.length === 0) return jobs;
  const holds = new Map((await store.observe.taskHolds(keys)).map((hold) => [hold.key, hold]));
  const held = jobs.map((job) => {
    const hold = unexplained(job) ? holds.get(job.key) : undefined;
    if (hold === undefined) return job;
    const reason = hold.gate !== null ? gateReason(hold.gate) : blockedReason(hold.blocker ?? '?');
    return { ...job, reason };
  });
  return withAgentCommandReasons(store, held);
}

/**
 * A queued job without a command and still without a reason, while no live host runs such jobs
 * (hosts.agentCommandLive, one read when there is any such job): the reason the dispatcher would
 * write (decision 0047), also for one it has not reached yet or when no dispatcher runs.
 */
async function withAgentCommandReasons(store: Store, jobs: readonly Job[]): Promise<readonly Job[]> {
  const bare = (job: Job): boolean => unexplained(job) && job.command === null;
  if (!jobs.some(bare) || (await store.hosts.agentCommandLive())) return jobs;
  return jobs.map((job) => (bare(job) ? { ...job, reason: WAITING_FOR_AGENT_COMMAND } : job));
}
