/**
 * The steps of a run between its placement and its agent's spawn (agent-run.ts), overlapped where
 * they need nothing of each other (issue 22, item 3: the start of an agent, p50 from enqueue). The
 * job's start, the agent's session, the claim and the agent's token (with an API) share one
 * transaction and one commit (store.runs.begin); the reads of the task (its texts) and of its
 * workspace plan need no claim and are sent beside it (one read of the task serves both): on
 * PostgreSQL each is a statement on another pooled connection, so the run waits for one round
 * trip instead of several; on SQLite they run one after the other (one connection, synchronous).
 */
import type { Claim, ClaimResult } from '../core/claim.js';
import { TaskStateError } from '../core/errors.js';
import { ACTIVE_JOB_STATES, type Job } from '../core/job.js';
import type { Session } from '../core/session.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { AgentReach } from './agent-token.js';
import { settleWorkspace, type RunDirectory } from './run-workspace.js';
import { Workspaces, type PlanDetail } from '../coordinator/workspaces.js';
import type { Task } from '../core/task.js';
import type { Store } from '../store/store.js';
import type { RunBeginParams, RunBeginResult } from '../store/run-store.js';

type Guard = { readonly id: number; readonly session: number; readonly epoch: number };
/** What the start of a run reads of the runner's options (beginRun): no more, so a test can give just that. */
type BeginOptions = Pick<
  AgentRunOptions,
  'store' | 'clock' | 'host' | 'log' | 'policy' | 'heartbeatIntervalMs' | 'sessionTtlMs' | 'apiUrl'
>;
type ClaimRef = { readonly session: number; readonly key: string; readonly epoch: number };
/** A run's reads that need no claim, sent beside store.runs.begin: the task and its workspace plan. */
type RunReads = { readonly task: Promise<Task | null>; readonly plan: Promise<PlanDetail> };
type Begun = { session: Session; claim: Claim | null; reach: AgentReach | null; reads: RunReads };

/**
 * How a run begins: store.runs.begin, or the placement that begins it in the same commit
 * (runner.ts placeAndRun, store.runs.placeAndBegin) when this process's dispatcher places it here.
 */
export type BeginCall = (params: RunBeginParams) => Promise<RunBeginResult>;

/** The name of the agent session a run makes for job `jobId` (the runner knows an orphan by it). */
export const agentSessionName = (jobId: number): string => `job ${jobId}`;
/** The name of the API token a run's agent gets. */
const agentTokenName = (jobId: number): string => `job ${jobId}`;

/**
 * The job's start, its agent's session, the task's claim for that session and, with an API, the
 * agent's token for the claim (`reach`), in one commit (store.runs.begin). Null when the start was
 * refused (the job moved on since its placement): nothing was written. `reach` is null without an
 * API, or when the claim was granted later (a run before it stopping): prepareRun makes it then.
 * `claim` is null when the run must not go on, with the job already ended: the task left `open`
 * after the placement (closed, escalated, done; its job was ended with it, so this finish is
 * refused), or another session holds the task (the job goes back to the queue, its attempt given
 * back, to wait for the claim; a holder that is an earlier run of the task still stopping is waited
 * out first). The session is then the caller's to end. Any other failure throws, after ending the
 * session if it was made.
 */
export async function beginRun(
  options: BeginOptions,
  job: Job,
  guard: Guard,
  begin: BeginCall = (params) => options.store.runs.begin(params),
): Promise<Begun | null> {
  const { store } = options;
  const beginning = begin({
    job: guard,
    session: {
      kind: 'agent',
      host: options.host,
      pid: process.pid,
      name: agentSessionName(job.id),
      ttlMs: options.sessionTtlMs,
    },
    key: job.key,
    token: options.apiUrl == null ? undefined : { name: agentTokenName(job.id) },
  });
  const reads = readRun(store, job);
  const begun = await beginning;
  if (!begun.ok) return null;
  const { session } = begun;
  const claim = await waitOutStoppingRun(options, job, guard, session, begun.claim).catch(
    async (error: unknown) => {
      await store.sessions.end(session.id).catch(() => undefined);
      throw error;
    },
  );
  const end = async (line: string, reason: string): Promise<Begun> => {
    await store.jobs.finish({ ...guard, status: 'cancelled', reason });
    options.log(`job ${job.id} ${job.key}: ${line}`);
    return { session, claim: null, reach: null, reads };
  };
  if (claim instanceof TaskStateError) return end(`not run, ${claim.message}`, claim.message);
  if (claim instanceof Error) {
    await store.sessions.end(session.id);
    throw claim;
  }
  // The token came with the claim begin granted; a claim granted later (waited out) has none yet.
  if (claim.ok)
    return {
      session,
      claim: claim.claim,
      reach: claim === begun.claim ? AgentReach.of(options, begun.token) : null,
      reads,
    };
  // Claimed between the pass that placed the job and this start: the job goes back to the queue,
  // its attempt given back, and the next pass keeps it waiting until the claim ends.
  const { holder } = claim;
  const since = new Date(holder.since).toISOString();
  const reason = `task held by session ${holder.session} on ${holder.host} since ${since}`;
  const back = await store.dispatch.requeue({
    ...guard,
    reason,
    policy: options.policy,
    attemptCounts: false,
  });
  options.log(
    `job ${job.id} ${job.key}: ${reason}: ${back.ok ? `back to the queue as ${back.job.status}` : 'lost'}`,
  );
  return { session, claim: null, reach: null, reads };
}

/**
 * The task and its workspace plan, read as the run begins: neither needs the claim (a binding
 * edited meanwhile is read as it would be by a read just after the claim). A run that stops
 * before it uses them leaves them unread, their failures included.
 */
function readRun(store: Store, job: Job): RunReads {
  const task = store.tasks.get(job.key);
  const plan = new Workspaces(store).plan({ key: job.key }, task);
  task.catch(() => undefined);
  plan.catch(() => undefined);
  return { task, plan };
}

/**
 * True when `holder` is the agent session of an earlier run of this task that has ended (its job
 * cancelled: `baton cancel 7; baton retry 7`) and whose runner is still stopping its agent: that
 * claim goes once the agent's tree is dead, or with its session's TTL (run-start.ts names it).
 */
async function heldByStoppingRun(options: BeginOptions, job: Job, holder: number): Promise<boolean> {
  const session = await options.store.sessions.get(holder);
  const earlier = /^job (\d+)$/.exec(session?.name ?? '');
  if (session?.kind !== 'agent' || session.state !== 'live' || earlier === null) return false;
  if (Number(earlier[1]) === job.id) return false;
  const run = await options.store.jobs.get(Number(earlier[1]));
  return (
    run !== null && run.key === job.key && !(ACTIVE_JOB_STATES as readonly string[]).includes(run.status)
  );
}

/**
 * A task held by a run that is stopping is not a holder to cancel this job for: the claim is asked
 * again every quarter heartbeat (the agent's session beating meanwhile) until it is granted, the
 * job moves on, or the stopping run's session has had its TTL and two beats; then the answer
 * stands (a held task still ends the job `cancelled`).
 */
async function waitOutStoppingRun(
  options: BeginOptions,
  job: Job,
  guard: Guard,
  session: Session,
  first: ClaimResult | Error,
): Promise<ClaimResult | Error> {
  const { store, clock, heartbeatIntervalMs } = options;
  const deadline = clock.monotonicNowMs() + (options.sessionTtlMs ?? 10_000) + 2 * heartbeatIntervalMs;
  let answer = first;
  while (!(answer instanceof Error) && !answer.ok && clock.monotonicNowMs() < deadline) {
    if (!(await heldByStoppingRun(options, job, answer.holder.session))) break;
    if (answer === first)
      options.log(
        `job ${job.id} ${job.key}: waiting for the run before it to stop (session ${answer.holder.session})`,
      );
    await clock.sleep(heartbeatIntervalMs / 4);
    const now = await store.jobs.get(job.id);
    if (now?.status !== 'running' || now.epoch !== guard.epoch) break;
    await store.sessions.heartbeat({ session: session.id });
    answer = await store.claims.acquire({ key: job.key, session: session.id }).catch((error: unknown) => {
      if (error instanceof Error) return error;
      throw error;
    });
  }
  return answer;
}

/** The task's title and feedback (and which answer that is, '' when none), for the command template. */
export type TaskTexts = Readonly<Record<'title' | 'feedback' | 'feedback_from', string>>;

/**
 * What the run needs once its claim is granted: the agent's token (with an
 * API, unless `minted` came with the claim from beginRun; it needs the agent's session live, which
 * it is until the run ends), its directory (run-workspace.ts, from the plan in `reads`) and its
 * task's texts (`reads`' task). `run` is null when the workspace says the job must not run (it has
 * then been ended or given back, its claim released); the reach is returned for the caller to close
 * when the run ends. A failure throws, after retiring the directory and closing a reach made here.
 */
export async function prepareRun(
  options: AgentRunOptions,
  job: Job,
  guard: Guard,
  claim: ClaimRef,
  minted: AgentReach | null,
  reads: RunReads,
): Promise<{ reach: AgentReach | null; run: { dir: RunDirectory; texts: TaskTexts } | null }> {
  const release = (outcome: 'failed' | 'released') => options.store.claims.release({ ...claim, outcome });
  const [reach, dir, texts] = await Promise.allSettled([
    minted ?? AgentReach.open(options, claim.session, job, claim.epoch),
    settleWorkspace(options, job, guard, claim, release, reads.plan),
    reads.task,
  ]);
  const failed = [reach, dir, texts].find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) {
    if (dir.status === 'fulfilled') await dir.value?.retire();
    if (minted === null) await (reach.status === 'fulfilled' ? reach.value?.close() : undefined);
    throw failed.reason;
  }
  const made = reach.status === 'fulfilled' ? reach.value : null;
  if (dir.status !== 'fulfilled' || texts.status !== 'fulfilled' || dir.value === null)
    return { reach: made, run: null };
  const task = texts.value;
  return {
    reach: made,
    run: {
      dir: dir.value,
      texts: {
        title: task?.title ?? '',
        feedback: task?.feedback ?? '',
        feedback_from: task?.feedbackFrom ?? '',
      },
    },
  };
}
