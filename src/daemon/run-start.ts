/**
 * The steps of a run between its placement and its agent's spawn (agent-run.ts), overlapped where
 * they need nothing of each other (issue 22, item 3: the start of an agent, p50 from enqueue). On
 * PostgreSQL each overlapped step is a statement on another pooled connection, so the run waits
 * for one round trip instead of several; on SQLite they run one after the other (one connection,
 * synchronous), in the order written here, and the job's start and the agent's session share one
 * commit (SqliteExecutor.grouped).
 */
import type { Claim, ClaimResult } from '../core/claim.js';
import { TaskStateError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { AgentReach } from './agent-token.js';
import { settleWorkspace, type RunDirectory } from './run-workspace.js';

type Guard = { readonly id: number; readonly session: number; readonly epoch: number };
type ClaimRef = { readonly session: number; readonly key: string; readonly epoch: number };

/**
 * The task's claim for the agent's session, taken after the job's start. Null when the run must
 * not go on, with the job already ended: the task left `open` after the placement (closed,
 * escalated, done; its job was ended with it, so this finish is refused), or another session holds
 * the task (the job is cancelled, naming the holder).
 */
export async function claimForRun(
  options: AgentRunOptions,
  job: Job,
  guard: Guard,
  agentSession: number,
): Promise<Claim | null> {
  const { store } = options;
  const end = async (line: string, reason: string): Promise<null> => {
    await store.jobs.finish({ ...guard, status: 'cancelled', reason });
    options.log(`job ${job.id} ${job.key}: ${line}`);
    return null;
  };
  let result: ClaimResult;
  try {
    result = await store.claims.acquire({ key: job.key, session: agentSession });
  } catch (error) {
    if (!(error instanceof TaskStateError)) throw error;
    return end(`not run, ${error.message}`, error.message);
  }
  if (result.ok) return result.claim;
  const { holder } = result;
  const since = new Date(holder.since).toISOString();
  const reason = `task held by session ${holder.session} on ${holder.host} since ${since}`;
  return end(`cancelled, ${reason}`, reason);
}

/** The task's title and feedback, for the command template. */
export type TaskTexts = { readonly title: string; readonly feedback: string };

/**
 * The job's start and its agent's session, sent together. Null when the start was refused (the
 * job moved on since its placement): the session, made for nothing, is ended at once. Either
 * failing throws, after ending the session if it was made.
 */
export async function startWithSession(
  options: AgentRunOptions,
  job: Job,
  guard: Guard,
): Promise<Session | null> {
  const [started, agent] = await Promise.allSettled([
    options.store.jobs.start(guard),
    options.store.sessions.start({
      kind: 'agent',
      host: options.host,
      pid: process.pid,
      name: `job ${job.id}`,
      ttlMs: options.sessionTtlMs,
    }),
  ]);
  if (started.status === 'fulfilled' && started.value.ok && agent.status === 'fulfilled') return agent.value;
  if (agent.status === 'fulfilled') await options.store.sessions.end(agent.value.id);
  if (started.status === 'rejected') throw started.reason;
  if (agent.status === 'rejected') throw agent.reason;
  return null;
}

/**
 * What the run needs once its claim is granted, which depends on the claim alone: the agent's
 * token (with an API; it needs the agent's session live, which it is until the run ends), its
 * directory (run-workspace.ts) and its task's texts. `run` is null when the workspace says the
 * job must not run (it has then been ended or given back, its claim released); the reach, when
 * made, is returned for the caller to close when the run ends. A failure throws, after retiring
 * the directory and closing the reach.
 */
export async function prepareRun(
  options: AgentRunOptions,
  job: Job,
  guard: Guard,
  claim: ClaimRef,
): Promise<{ reach: AgentReach | null; run: { dir: RunDirectory; texts: TaskTexts } | null }> {
  const release = (outcome: 'failed' | 'released') => options.store.claims.release({ ...claim, outcome });
  const [reach, dir, texts] = await Promise.allSettled([
    AgentReach.open(options, claim.session, job, claim.epoch),
    settleWorkspace(options, job, guard, claim, release),
    options.store.tasks.get(job.key),
  ]);
  const failed = [reach, dir, texts].find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) {
    if (dir.status === 'fulfilled') await dir.value?.retire();
    await (reach.status === 'fulfilled' ? reach.value?.close() : undefined);
    throw failed.reason;
  }
  const made = reach.status === 'fulfilled' ? reach.value : null;
  if (dir.status !== 'fulfilled' || texts.status !== 'fulfilled' || dir.value === null)
    return { reach: made, run: null };
  const task = texts.value;
  return {
    reach: made,
    run: { dir: dir.value, texts: { title: task?.title ?? '', feedback: task?.feedback ?? '' } },
  };
}
