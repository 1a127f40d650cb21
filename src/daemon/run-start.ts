/**
 * The steps of a run between its placement and its agent's spawn (agent-run.ts), overlapped where
 * they need nothing of each other (issue 22, item 3: the start of an agent, p50 from enqueue). On
 * PostgreSQL each overlapped step is a statement on another pooled connection, so the run waits
 * for one round trip instead of several; on SQLite they run one after the other (one connection,
 * synchronous), in the order written here, and the job's start and the agent's session share one
 * commit (SqliteExecutor.grouped).
 */
import type { Job } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { AgentReach } from './agent-token.js';
import { settleWorkspace, type RunDirectory } from './run-workspace.js';

type Guard = { readonly id: number; readonly session: number; readonly epoch: number };
type ClaimRef = { readonly session: number; readonly key: string; readonly epoch: number };

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
