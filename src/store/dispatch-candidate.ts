/**
 * A dispatch candidate's columns as both engines' candidates query returns them, and the one
 * mapping to the domain: the engines differ only in how they decode a boolean, a JSON array and
 * a job row, which each does before calling candidateOf.
 */
import type { DispatchCandidate } from '../core/dispatch-plan.js';
import type { Job } from '../core/job.js';
import type { TaskGate } from '../core/task.js';
import type { Instant } from '../core/time.js';
import type { WorkspaceKind } from '../core/workspace-plan.js';

/** One bound workspace with its live lock, as the query's JSON array holds it. */
export interface CandidateWorkspaceJson {
  name: string;
  path: string;
  kind: WorkspaceKind;
  session: number | null;
  jobId: number | null;
  epoch: number | null;
  since: Instant | null;
  host: string | null;
}

/** The live claim on the task, as the query's JSON object holds it. */
export interface CandidateHolderJson {
  session: number;
  host: string;
  since: Instant;
}

/** The columns beside the job's own, the same on both engines once decoded. */
export interface CandidateColumns {
  key: string;
  gate: TaskGate | null;
  /** The first dependency not done, as `K (state)` (claim-set.ts's blockerOf), or null. */
  blocker: string | null;
  task_workspace: string | null;
  agent_name: string | null;
  agent_role: string | null;
  agent_department: string | null;
  agent_workspace: string | null;
  project_name: string | null;
  primary_workspace: string | null;
  /** A boolean on PostgreSQL, 0 or 1 on SQLite: see DispatchCandidate.waitsForAgentCommand. */
  waits_for_agent_command: boolean | number;
}

export function candidateOf(
  job: Job,
  row: CandidateColumns,
  requiresFilesystem: boolean,
  workspaces: readonly CandidateWorkspaceJson[],
  claimedBy: CandidateHolderJson | null,
): DispatchCandidate {
  return {
    job,
    gate: row.gate,
    blockedBy: row.blocker,
    claimedBy: claimedBy === null ? null : { ...claimedBy, since: Number(claimedBy.since) },
    waitsForAgentCommand: Boolean(row.waits_for_agent_command),
    plan: {
      task: { key: row.key, requiresFilesystem, workspace: row.task_workspace },
      agent:
        row.agent_name === null
          ? null
          : {
              name: row.agent_name,
              role: row.agent_role ?? '',
              department: row.agent_department,
              workspace: row.agent_workspace,
            },
      project:
        row.project_name === null
          ? null
          : { name: row.project_name, primaryWorkspace: row.primary_workspace },
    },
    workspaces: workspaces.map((workspace) => ({
      name: workspace.name,
      path: workspace.path,
      kind: workspace.kind,
      holder:
        workspace.session === null || workspace.epoch === null || workspace.since === null
          ? null
          : {
              session: workspace.session,
              host: workspace.host ?? '',
              jobId: workspace.jobId,
              since: workspace.since,
              epoch: workspace.epoch,
            },
    })),
  };
}
