/**
 * Where one run's agent works, settled after Step 0 (the claim granted, its epoch known) from the
 * task's workspace plan, resolved again as the run begins because a binding may have changed
 * since placement (its reads need no claim: run-start.ts sends them beside runs.begin):
 *
 * | plan                        | the run                                                         |
 * |-----------------------------|-----------------------------------------------------------------|
 * | lock mode none              | in the runner's directory; no lock is touched                   |
 * | exclusive, kind dir         | in the workspace's path, under the workspace's lock             |
 * | exclusive, kind worktree    | in a git worktree of the workspace made for this claim epoch,   |
 * |                             |   retired when the run ends (unpushed work archived to a ref);  |
 * |                             |   no workspace lock: the task's claim is the exclusion          |
 * | unresolved                  | not run: the job fails with WORKSPACE_UNRESOLVED, cause and fix |
 *
 * The lock was normally taken by the placement, for this runner's session and this job; taking
 * it again here is idempotent for that pair. A job placed as cognitive whose task became coding
 * since takes it here, or goes back to the queue, saying who holds the workspace. Either way the
 * store releases it with the job's finish, cancel or requeue, or with this runner's session.
 */
import { statSync } from 'node:fs';
import { BatonError, WorkspaceConfigurationError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { waitingForWorkspace } from '../core/workspace-lock.js';
import { sharedLock, type Workspace, type WorkspacePlan } from '../core/workspace-plan.js';
import { prepareWorktree, retireWorktree } from '../os/worktree.js';
import { isGitFailure } from '../os/git.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { absoluteDb, installGuard, installedBatonBin, type GuardClaim } from '../coordinator/guard.js';
import { Workspaces, type PlanDetail } from '../coordinator/workspaces.js';
import { installCommitTrailers } from '../coordinator/commit-trailers.js';
import type { AgentIdentity } from '../os/agent-uid.js';
import { seatAgent } from './agent-uids.js';

export interface RunDirectory {
  /** The agent's working directory. */
  readonly path: string;
  /** What the agent is told about it: BATON_WORKSPACE, and BATON_BRANCH for a worktree. */
  readonly env: Readonly<Record<string, string>>;
  /** Ends the run's use of the directory (retires a worktree); idempotent, never throws. */
  retire(): Promise<void>;
  /** The uid the agent runs as, with `baton up --agent-uids` (agent-uids.ts). */
  readonly identity?: AgentIdentity | undefined;
}

type Options = Pick<
  AgentRunOptions,
  'store' | 'host' | 'runnerSession' | 'cwd' | 'worktreeDir' | 'policy' | 'log' | 'dbUrl' | 'agentUids'
>;
type Guard = { readonly id: number; readonly session: number; readonly epoch: number };
/** Releases the run's claim on the task, with the outcome given. */
type ClaimOutcome = 'failed' | 'released';
type ReleaseClaim = (outcome: ClaimOutcome) => Promise<unknown>;

const nothingToRetire = (): Promise<void> => Promise.resolve();

/**
 * The directory the job's agent runs in, or null when it must not run: the job has then been
 * ended or given back, with the reason on it, and the claim released. `planned` is the task's
 * workspace plan when the caller has sent its reads already (run-start.ts readRun). With agent
 * uids, a uid of the pool is seated in it (agent-uids.ts); one that cannot be fails the job.
 */
export async function settleWorkspace(
  options: Options,
  job: Job,
  guard: Guard,
  claim: GuardClaim,
  releaseClaim: ReleaseClaim,
  planned?: Promise<PlanDetail>,
): Promise<RunDirectory | null> {
  const dir = await settle(options, job, guard, claim, releaseClaim, planned);
  const pool = options.agentUids;
  if (dir === null || pool == null) return dir;
  const say = (line: string): void => options.log(`job ${job.id} ${job.key}: ${line}`);
  try {
    return await seatAgent(pool, dir, say);
  } catch (error) {
    await dir.retire();
    const hint = error instanceof BatonError && error.hint !== undefined ? `; fix: ${error.hint}` : '';
    const reason = `agent uid not seated: ${error instanceof Error ? error.message : String(error)}${hint}`;
    return failRun(options, job, guard, releaseClaim, reason);
  }
}

/** Fails the job with `reason` and releases its claim as failed: the run does not go on. */
async function failRun(
  options: Options,
  job: Job,
  guard: Guard,
  releaseClaim: ReleaseClaim,
  reason: string,
): Promise<null> {
  await options.store.jobs.finish({ ...guard, status: 'failed', reason });
  await releaseClaim('failed');
  options.log(`job ${job.id} ${job.key}: failed, ${reason}`);
  return null;
}

async function settle(
  options: Options,
  job: Job,
  guard: Guard,
  claim: GuardClaim,
  releaseClaim: ReleaseClaim,
  planned?: Promise<PlanDetail>,
): Promise<RunDirectory | null> {
  const { store } = options;
  const say = (line: string): void => options.log(`job ${job.id} ${job.key}: ${line}`);
  const fail = (reason: string): Promise<null> => failRun(options, job, guard, releaseClaim, reason);
  /** Back to the queue as the job's retry policy says; the claim ends as `outcome`. */
  const giveBack = async (reason: string, outcome: ClaimOutcome): Promise<null> => {
    const result = await store.dispatch.requeue({ ...guard, reason, policy: options.policy });
    await releaseClaim(outcome);
    say(`${reason}: ${result.ok ? `back to the queue as ${result.job.status}` : 'lost'}`);
    return null;
  };
  let plan: WorkspacePlan;
  try {
    plan = (await (planned ?? new Workspaces(store).plan({ key: job.key }))).plan;
  } catch (error) {
    if (!(error instanceof WorkspaceConfigurationError)) throw error;
    return fail(`WORKSPACE_UNRESOLVED: ${error.message}; fix: ${error.hint ?? ''}`);
  }
  if (plan.lockMode === 'none')
    return { path: options.cwd, env: { BATON_WORKSPACE: '' }, retire: nothingToRetire };

  const workspace = plan.workspace;
  const shared = sharedLock(plan);
  if (shared === null) {
    // No shared lock (a worktree): every claim gets its own checkout on the task's branch.
    try {
      return await worktree(options, job, workspace, claim, say);
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      const fix = error.hint ?? 'see the runner log';
      const reason = `worktree of workspace ${workspace.name}: ${error.message}; fix: ${fix}`;
      // git failing (a race with another process on this repository, a lock, a full disk) is this
      // host's trouble, not the job's: another attempt, as its retry policy allows.
      return isGitFailure(error) ? giveBack(reason, 'failed') : fail(reason);
    }
  }
  const lock = await store.workspaceLocks.acquire({
    workspace: shared.name,
    session: options.runnerSession,
    jobId: job.id,
  });
  if (!lock.ok) return giveBack(waitingForWorkspace(workspace.name, lock.holder), 'released');
  if (!isDirectory(workspace.path)) {
    return fail(
      `workspace ${workspace.name}: ${workspace.path} is not a directory on host ${options.host}; ` +
        'fix: create it there, or bind the task to a workspace this host has',
    );
  }
  return { path: workspace.path, env: { BATON_WORKSPACE: workspace.name }, retire: nothingToRetire };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A git worktree of the workspace's repository for this claim epoch, on the task's branch. */
async function worktree(
  options: Options,
  job: Job,
  workspace: Workspace,
  claim: GuardClaim,
  say: (line: string) => void,
): Promise<RunDirectory> {
  const repoPath = workspace.path;
  const where = { repoPath, key: job.key, epoch: claim.epoch, baseDir: options.worktreeDir };
  const { path, branch } = await prepareWorktree(where);
  say(`worktree ${path} on branch ${branch} (workspace ${workspace.name})`);
  await guardPushes(options, path, claim, say);
  await installCommitTrailers(path, { ...claim, host: options.host }).catch((error: unknown) =>
    say(`commits not stamped: ${error instanceof Error ? error.message : String(error)}`),
  );
  let retired: Promise<void> | null = null;
  const retire = async (): Promise<void> => {
    try {
      const result = await retireWorktree({ repoPath, path, branch });
      const archived =
        result.archivedRef === null
          ? 'nothing unpushed to archive'
          : `unpushed work archived to ${result.archivedRef}`;
      say(
        `worktree ${path} ${result.removed ? 'removed' : 'already gone'}, branch ${branch} kept, ${archived}`,
      );
    } catch (error) {
      // The run's outcome stands; the worktree stays for an operator, and the next claim of the
      // task retires it before making its own.
      say(`could not retire worktree ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  return {
    path,
    env: { BATON_WORKSPACE: workspace.name, BATON_BRANCH: branch },
    retire: () => (retired ??= retire()),
  };
}

/**
 * Installs the push guard (guard.ts) for the run's worktree, so a push made after its claim was
 * fenced off is refused even in the moment before the runner kills the agent. A repository with
 * a pre-push hook of its own keeps it: the run goes on unguarded and the log says how to chain it.
 */
async function guardPushes(
  options: Options,
  dir: string,
  claim: GuardClaim,
  say: (line: string) => void,
): Promise<void> {
  try {
    const db = absoluteDb(options.dbUrl, options.cwd);
    await installGuard({ dir, claim, db, node: process.execPath, batonBin: installedBatonBin() });
    say(`pushes from ${dir} guarded by claim epoch ${claim.epoch}`);
  } catch (error) {
    const hint = error instanceof BatonError && error.hint !== undefined ? `; ${error.hint}` : '';
    say(`push guard not installed: ${error instanceof Error ? error.message : String(error)}${hint}`);
  }
}
