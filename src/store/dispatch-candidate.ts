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

/** The columns beside the job's own, the same on both engines once decoded. */
export interface CandidateColumns {
  key: string;
  gate: TaskGate | null;
  task_workspace: string | null;
  agent_name: string | null;
  agent_role: string | null;
  agent_department: string | null;
  agent_workspace: string | null;
  project_name: string | null;
  primary_workspace: string | null;
}

export function candidateOf(
  job: Job,
  r: CandidateColumns,
  requiresFilesystem: boolean,
  workspaces: readonly CandidateWorkspaceJson[],
): DispatchCandidate {
  return {
    job,
    gate: r.gate,
    plan: {
      task: { key: r.key, requiresFilesystem, workspace: r.task_workspace },
      agent:
        r.agent_name === null
          ? null
          : {
              name: r.agent_name,
              role: r.agent_role ?? '',
              department: r.agent_department,
              workspace: r.agent_workspace,
            },
      project:
        r.project_name === null ? null : { name: r.project_name, primaryWorkspace: r.primary_workspace },
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
