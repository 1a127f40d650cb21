/**
 * The workspace concurrency model (docs/architecture.md#workspace-plan): which runs take an
 * exclusive lock on a workspace, and on which one. Lock mode `none` is the default, so cognitive
 * work (planning, writing, review without a checkout) runs fully in parallel; `exclusive` is for
 * runs that touch files.
 *
 * Decision table, in order (the first row that applies wins):
 *
 *   | condition                                          | plan                                   |
 *   |----------------------------------------------------|----------------------------------------|
 *   | the task names a workspace                         | exclusive on that workspace            |
 *   | task.requiresFilesystem, or the agent's role is    | exclusive on the agent's workspace;    |
 *   |   a coding role (isCodingRole)                     |   else on the project's primary;       |
 *   |                                                    |   else WorkspaceConfigurationError     |
 *   | everything else                                    | lockMode none, workspace null          |
 *
 * What an exclusive plan locks depends on the workspace's kind (sharedLock):
 *
 *   | kind     | the run works in                      | shared lock taken with the placement    |
 *   |----------|---------------------------------------|-----------------------------------------|
 *   | dir      | the directory itself                  | the workspace's lock                    |
 *   | worktree | a git worktree of its own, per claim  | none: the task's claim is the exclusion |
 *
 * There is no other fallback: never "any workspace there is". Four coding agents without a
 * binding silently serialising on the one workspace that exists was the failure this replaces;
 * a run that needs files and has no workspace is a configuration error the operator must see.
 */
import { assert } from './assert.js';
import { WorkspaceConfigurationError } from './errors.js';

export const WORKSPACE_KINDS = ['dir', 'worktree'] as const;
/** `dir`: runs use the directory as it is; `worktree`: a git worktree per claim inside it. */
export type WorkspaceKind = (typeof WORKSPACE_KINDS)[number];

export interface Workspace {
  readonly name: string;
  /** Absolute path on the host that runs the agent. */
  readonly path: string;
  readonly kind: WorkspaceKind;
}

export interface Agent {
  readonly name: string;
  readonly role: string;
  readonly department: string | null;
  /** The name of the agent's own workspace, if it has one. */
  readonly workspace: string | null;
}

export interface Project {
  readonly name: string;
  /** The name of the project's primary workspace, if it has one. */
  readonly primaryWorkspace: string | null;
}

/** What a run needs from its task: the per-task filesystem signal and an explicit binding. */
export interface TaskRequirements {
  readonly key: string;
  readonly requiresFilesystem: boolean;
  readonly workspace: string | null;
}

/** The plan's type carries the invariant: exclusive ⇒ a workspace, none ⇒ null. */
export type WorkspacePlan =
  | { readonly lockMode: 'exclusive'; readonly workspace: Workspace }
  | { readonly lockMode: 'none'; readonly workspace: null };

export type LockMode = WorkspacePlan['lockMode'];

export interface WorkspacePlanInput {
  readonly task: TaskRequirements;
  /** The agent that will run the task, when one is known. */
  readonly agent: Agent | null;
  /** The task's project, when it names a registered project. */
  readonly project: Project | null;
  /** The workspaces the bindings above name; a binding to a workspace not given is a bug. */
  readonly workspaces: readonly Workspace[];
}

const CODING_ROLE = /cto|engineer|developer|devops|sre/i;

/** The seed's transition-window safety net: an engineering agent is assumed to touch files. */
export function isCodingRole(agent: Pick<Agent, 'role' | 'department'>): boolean {
  return CODING_ROLE.test(agent.role) || agent.department?.toLowerCase() === 'engineering';
}

/**
 * The workspace whose lock a run of this plan must hold, or null: only an exclusive plan on a
 * `dir` workspace shares one directory between runs. A `worktree` workspace gives every claim a
 * checkout of its own, which the task's claim already makes exclusive, so coding runs on
 * different tasks of one repository go in parallel.
 */
export function sharedLock(plan: WorkspacePlan): Workspace | null {
  return plan.lockMode === 'exclusive' && plan.workspace.kind === 'dir' ? plan.workspace : null;
}

/** Resolves the plan by the decision table above; throws WorkspaceConfigurationError. */
export function resolveWorkspacePlan(input: WorkspacePlanInput): WorkspacePlan {
  const { task, agent, project } = input;
  const lookup = (name: string): Workspace => {
    const found = input.workspaces.find((workspace) => workspace.name === name);
    // Bindings are foreign keys: a caller that did not pass the bound workspace has a bug.
    assert(found !== undefined, `workspace ${name} is bound but was not given`);
    return found;
  };
  if (task.workspace !== null) return { lockMode: 'exclusive', workspace: lookup(task.workspace) };
  const codingAgent = agent !== null && isCodingRole(agent);
  if (!task.requiresFilesystem && !codingAgent) return { lockMode: 'none', workspace: null };
  if (agent !== null && agent.workspace !== null) {
    return { lockMode: 'exclusive', workspace: lookup(agent.workspace) };
  }
  if (project !== null && project.primaryWorkspace !== null) {
    return { lockMode: 'exclusive', workspace: lookup(project.primaryWorkspace) };
  }
  throw unresolved(task, agent, project, codingAgent);
}

/** The cause names every binding that was looked at; the fix says how to add one. */
function unresolved(
  task: TaskRequirements,
  agent: Agent | null,
  project: Project | null,
  codingAgent: boolean,
): WorkspaceConfigurationError {
  const signals = [
    ...(task.requiresFilesystem ? ['it requires the filesystem'] : []),
    ...(codingAgent && agent !== null ? [`agent ${agent.name} has the coding role "${agent.role}"`] : []),
  ];
  const looked = [
    'the task names no workspace',
    agent === null ? 'no agent was given' : `agent ${agent.name} has no workspace`,
    project === null
      ? 'the task is in no registered project'
      : `project ${project.name} has no primary workspace`,
  ];
  const cause =
    `task ${task.key} needs an exclusive workspace lock (${signals.join(' and ')}) ` +
    `but no workspace can be resolved: ${looked.join(', ')}`;
  const cognitive = task.requiresFilesystem && !codingAgent;
  const fix =
    `bind a workspace to the task with \`baton task set ${task.key} --workspace <w>\` ` +
    '(register it first with `baton workspace add <w> --path <dir>`), ' +
    `or give ${agent === null ? 'the agent that runs it' : `agent ${agent.name}`} a workspace, ` +
    `or give ${project === null ? 'its project' : `project ${project.name}`} a primary workspace` +
    (cognitive
      ? `; if the task changes no files, run \`baton task set ${task.key} --no-requires-filesystem\``
      : '');
  return new WorkspaceConfigurationError(task.key, agent?.name ?? null, project?.name ?? null, cause, fix);
}
