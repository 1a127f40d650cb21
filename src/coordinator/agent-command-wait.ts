/**
 * A job enqueued without a command runs only on a host whose `baton up` has an --agent-command
 * (docs/decisions/0047-jobs-wait-for-an-agent-command.md). When no live host has one, the enqueue
 * still queues it (a host may come later, or a `baton job next` take it: a pull worker is the
 * agent) and says so, once, with the fixes: the answer carries a
 * `warning` that `baton enqueue` prints on stderr and `POST /v1/jobs` returns beside the job.
 */
import type { JobEnqueueResult, Store } from '../store/store.js';

const NO_AGENT_COMMAND_WARNING =
  'no live baton up has an --agent-command, so this job (no --command) waits until one has: ' +
  'start baton up with --agent-command, take it with `baton job next`, or cancel it and enqueue with --command';

/** An enqueue's answer, with a warning when the job it created cannot run anywhere yet. */
export interface EnqueueAnswer extends JobEnqueueResult {
  readonly warning?: string;
}

/** The answer, warned when it created a job without a command and no live host runs one. */
export async function warnedEnqueue(store: Store, answer: JobEnqueueResult): Promise<EnqueueAnswer> {
  // A job handed at enqueue to a waiting `baton job next --wait` is claimed already: nothing waits.
  if (!answer.created || answer.job.command !== null || answer.job.status !== 'queued') return answer;
  if (await store.hosts.agentCommandLive()) return answer;
  return { ...answer, warning: NO_AGENT_COMMAND_WARNING };
}
