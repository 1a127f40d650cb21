/**
 * One dispatcher pass decided as a whole (docs/decisions/0016-set-based-dispatch.md): from the
 * queued candidates (read in one query, each with its task's gate and everything its workspace
 * plan is resolved from) and the hosts' capacity, which jobs to place where, which wait and why,
 * and which are skipped because their plan is unresolved. Pure: the store then writes the
 * placements in one guarded step and the reasons in another, and remains the judge of each
 * (term, job state, host, workspace lock).
 *
 * In dispatch order, each candidate:
 *   | condition                                        | decision                                    |
 *   |--------------------------------------------------|---------------------------------------------|
 *   | its task waits behind a gate                     | wait: `waiting for <gate> approval`         |
 *   | its task waits for a task not done (dependency)  | wait: `waits for task K (<its state>)`      |
 *   | its task is claimed (a person, an earlier run)   | wait: `waiting for K, claimed by session S`  |
 *   | no command, and no live host has an agent one    | wait: `waiting for a host with an agent …`  |
 *   | its plan is unresolved                           | skip, with the cause and the fix            |
 *   | its plan's shared lock is held (as read)         | wait: `waiting for workspace W, held by …`  |
 *   | an earlier placement of this pass takes the lock | behind that placement (reason once written) |
 *   | no host fits (core/capacity.ts; a job without a  | wait, with placeOnFleet's reason            |
 *   |   command: no host whose runner has an agent one)|                                             |
 *   | else                                             | place on placeOnFleet's host, with the lock |
 * A job that waits does not stop the pass: a smaller job behind it may still fit (backfill).
 * Only a reason that differs from the job's current one is written.
 */
import { WorkspaceConfigurationError } from './errors.js';
import type { Job } from './job.js';
import {
  WAITING_FOR_AGENT_COMMAND,
  afterPlacement,
  placeOnFleet,
  type Fleet,
  type HostCapacity,
} from './capacity.js';
import type { TaskGate } from './task.js';
import type { Instant } from './time.js';
import { waitingForWorkspace, type LockHolder } from './workspace-lock.js';
import {
  resolveWorkspacePlan,
  sharedLock,
  type WorkspacePlanInput,
  type Workspace,
} from './workspace-plan.js';

/** A bound workspace as the candidate read saw it: with the live lock on it, if any. */
export interface CandidateWorkspace extends Workspace {
  readonly holder: LockHolder | null;
}

/** Who holds a candidate's task: a live claim the job's own claim would be refused for. */
export interface TaskClaimHolder {
  readonly session: number;
  readonly host: string;
  readonly since: Instant;
}

/** A queued job with all a pass needs to decide on it. */
export interface DispatchCandidate {
  readonly job: Job;
  /** The gate its task waits behind, if any. */
  readonly gate: TaskGate | null;
  /** The first task its task depends on that is not done, as `K (state)`, if any. */
  readonly blockedBy: string | null;
  /** The live claim on its task, if any: the job waits for it instead of being placed and refused. */
  readonly claimedBy: TaskClaimHolder | null;
  /**
   * It has no command of its own and no enabled host has a live runner with an agent command
   * (docs/decisions/0047-jobs-wait-for-an-agent-command.md): it waits, read like a held job.
   */
  readonly waitsForAgentCommand: boolean;
  /** What its workspace plan is resolved from (core/workspace-plan.ts), without the workspaces. */
  readonly plan: Omit<WorkspacePlanInput, 'workspaces'>;
  /** The workspaces the task, its agent and its project name, each with its live lock. */
  readonly workspaces: readonly CandidateWorkspace[];
}

export interface PlannedPlacement {
  readonly job: Job;
  readonly host: string;
  /** The workspace whose lock the placement takes with it (sharedLock), if any. */
  readonly workspace: string | undefined;
}

export interface DispatchDecision {
  readonly place: readonly PlannedPlacement[];
  /** Jobs whose waiting reason changes. */
  readonly wait: readonly { readonly job: Job; readonly reason: string }[];
  readonly skip: readonly { readonly job: Job; readonly error: WorkspaceConfigurationError }[];
  /** Jobs needing a lock that place[index] takes: they wait for whoever holds it once written. */
  readonly behind: readonly { readonly job: Job; readonly workspace: string; readonly index: number }[];
}

/** The reason of a job skipped for an unresolved plan, as `queue list` shows it. */
export function skippedReason(error: WorkspaceConfigurationError): string {
  return `SKIPPED workspace_unresolved: ${error.message}`;
}

export function gateReason(gate: TaskGate | null): string {
  return `waiting for ${gate ?? 'design'} approval`;
}

/** The reason of a job whose task depends on a task not done: `blocker` is `K (state)`. */
export function blockedReason(blocker: string): string {
  return `waits for task ${blocker}`;
}

/** The reason of a job whose task someone else holds (`baton claim`, an earlier run stopping). */
function claimedReason(key: string, holder: TaskClaimHolder): string {
  return `waiting for ${key}, claimed by session ${holder.session} on ${holder.host}`;
}

/** The lock a candidate's plan needs (a workspace name), or an unresolved plan's error. */
function lockOf(candidate: DispatchCandidate): string | null | WorkspaceConfigurationError {
  try {
    return (
      sharedLock(resolveWorkspacePlan({ ...candidate.plan, workspaces: candidate.workspaces }))?.name ?? null
    );
  } catch (error) {
    if (error instanceof WorkspaceConfigurationError) return error;
    throw error;
  }
}

/**
 * Decides one pass by the table above; `fleet` is the store's (dispatch.fleet, or fleetOf the
 * hosts), read at `now`. Linear in the open hosts per job (placeOnFleet).
 */
export function decideDispatch(
  candidates: readonly DispatchCandidate[],
  fleet: Fleet,
  now: Instant,
  staleAfterMs: number,
): DispatchDecision {
  const capacity: HostCapacity[] = [...fleet.open];
  const open: Fleet = { ...fleet, open: capacity };
  const place: PlannedPlacement[] = [];
  const wait: { job: Job; reason: string }[] = [];
  const skip: { job: Job; error: WorkspaceConfigurationError }[] = [];
  const behind: { job: Job; workspace: string; index: number }[] = [];
  /** Locks this pass's placements take: workspace → index in `place`. */
  const taking = new Map<string, number>();
  const waitFor = (job: Job, reason: string): void => {
    if (job.reason !== reason) wait.push({ job, reason });
  };
  for (const candidate of candidates) {
    const { job } = candidate;
    if (candidate.gate !== null) {
      waitFor(job, gateReason(candidate.gate));
      continue;
    }
    if (candidate.blockedBy !== null) {
      waitFor(job, blockedReason(candidate.blockedBy));
      continue;
    }
    if (candidate.claimedBy !== null) {
      waitFor(job, claimedReason(job.key, candidate.claimedBy));
      continue;
    }
    if (candidate.waitsForAgentCommand) {
      waitFor(job, WAITING_FOR_AGENT_COMMAND);
      continue;
    }
    const lock = lockOf(candidate);
    if (lock instanceof WorkspaceConfigurationError) {
      skip.push({ job, error: lock });
      continue;
    }
    const holder =
      lock === null ? null : candidate.workspaces.find((workspace) => workspace.name === lock)?.holder;
    if (lock !== null && holder !== null && holder !== undefined) {
      waitFor(job, waitingForWorkspace(lock, holder));
      continue;
    }
    const taken = lock === null ? undefined : taking.get(lock);
    if (lock !== null && taken !== undefined) {
      behind.push({ job, workspace: lock, index: taken });
      continue;
    }
    const ramMb = job.ramMb ?? 0;
    const placed = placeOnFleet(ramMb, open, now, staleAfterMs, job.command === null);
    if (typeof placed === 'string') {
      waitFor(job, placed);
      continue;
    }
    const host = capacity[placed] as HostCapacity;
    capacity[placed] = afterPlacement(host, ramMb);
    if (lock !== null) taking.set(lock, place.length);
    place.push({ job, host: host.name, workspace: lock ?? undefined });
  }
  return { place, wait, skip, behind };
}
