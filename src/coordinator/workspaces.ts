/**
 * Use cases of the workspace concurrency model: registering workspaces, agents and projects,
 * adding a task with its filesystem requirement and binding, and resolving a task's workspace
 * plan. Raw input is checked here before anything reaches the store; the decision itself is the
 * pure resolveWorkspacePlan in core, fed with what the store holds.
 */
import { isAbsolute } from 'node:path';
import { assert } from '../core/assert.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Actor, Task } from '../core/task.js';
import { validateKey, validateName, validateOneOf } from '../core/validate.js';
import {
  WORKSPACE_KINDS,
  resolveWorkspacePlan,
  type Agent,
  type Project,
  type TaskRequirements,
  type Workspace,
  type WorkspacePlan,
} from '../core/workspace-plan.js';
import { checkWorkspaceDir } from '../os/workspace-dir.js';
import type { Store } from '../store/store.js';
import type { AgentAddParams, ProjectAddParams, WorkspaceAddParams } from '../store/workspace-store.js';
import { actorParams, parseTaskAdd, type TaskAddInput } from './inputs.js';
import { triaged } from './lifecycle.js';

/** The schema's bound on a workspace path. */
const PATH_LENGTH_MAX = 4096;

export interface WorkspaceAddInput {
  readonly name: unknown;
  readonly path: unknown;
  readonly kind?: unknown;
  /** Who asked, named by the adapter (issue 14, item 11): the ledger row's `by`. */
  readonly by?: Actor | undefined;
}

export interface AgentAddInput {
  readonly name: unknown;
  readonly role: unknown;
  readonly department?: unknown;
  readonly workspace?: unknown;
}

export interface ProjectAddInput {
  readonly name: unknown;
  readonly primaryWorkspace?: unknown;
}

export interface TaskAddWithRequirementsInput extends TaskAddInput {
  readonly requiresFilesystem?: unknown;
  readonly workspace?: unknown;
}

export interface TaskRequirementsInput {
  readonly key: unknown;
  /** true or false; left out, the current value stays. */
  readonly requiresFilesystem?: unknown;
  /** A workspace name, or null to unbind; left out, the current binding stays. */
  readonly workspace?: unknown;
}

export interface PlanInput {
  readonly key: unknown;
  /** The agent that will run the task; by default the task's assignee, if that names an agent. */
  readonly agent?: unknown;
}

export interface TaskWithRequirements {
  readonly task: Task;
  readonly requirements: TaskRequirements;
}

/** What a plan was resolved from, for display; the plan itself is `plan`. */
export interface PlanDetail {
  readonly plan: WorkspacePlan;
  readonly requirements: TaskRequirements;
  readonly agent: Agent | null;
  readonly project: Project | null;
}

const optional = <T>(value: unknown, check: (raw: unknown) => T): T | undefined =>
  value === undefined ? undefined : check(value);

function validatePath(value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new InvalidInputError('workspace path is empty', 'give the directory, such as --path /srv/api');
  }
  if (value.length > PATH_LENGTH_MAX) {
    throw new InvalidInputError(
      `workspace path is ${value.length} characters long; the limit is ${PATH_LENGTH_MAX}`,
      'use a shorter path, or a symbolic link to the directory',
    );
  }
  if (/[\u0000-\u001f\u007f]/u.test(value)) {
    throw new InvalidInputError('workspace path contains control characters', 'remove them');
  }
  if (!isAbsolute(value)) {
    throw new InvalidInputError(
      `workspace path ${JSON.stringify(value)} is relative`,
      'give an absolute path: runners on other hosts and in other directories read it',
    );
  }
  return value;
}

function validateFlag(what: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new InvalidInputError(`${what} must be true or false`);
  return value;
}

function parseWorkspaceAdd(input: WorkspaceAddInput): WorkspaceAddParams {
  return {
    name: validateName('workspace', input.name),
    path: validatePath(input.path),
    kind: input.kind === undefined ? 'dir' : validateOneOf('workspace kind', input.kind, WORKSPACE_KINDS),
    ...actorParams(input.by),
  };
}

function parseAgentAdd(input: AgentAddInput): AgentAddParams {
  return {
    name: validateName('agent', input.name),
    role: validateName('role', input.role),
    department: optional(input.department, (value) => validateName('department', value)),
    workspace: optional(input.workspace, (value) => validateName('workspace', value)),
  };
}

function parseProjectAdd(input: ProjectAddInput): ProjectAddParams {
  return {
    name: validateName('project', input.name),
    primaryWorkspace: optional(input.primaryWorkspace, (value) => validateName('workspace', value)),
  };
}

export class Workspaces {
  constructor(private readonly store: Store) {}

  /**
   * Registers a workspace. Its path is checked here only when every runner shares this machine
   * (a store that is not multi-host: SQLite): on PostgreSQL the runners that work in it may be on
   * other hosts, and one that lacks it fails the run naming the host (src/daemon/run-workspace.ts).
   */
  async addWorkspace(input: WorkspaceAddInput): Promise<Workspace> {
    const params = parseWorkspaceAdd(input);
    if (!this.store.capabilities.multiHost) await checkWorkspaceDir(params.path, params.kind);
    return this.store.workspaces.add(params);
  }

  listWorkspaces(): Promise<readonly Workspace[]> {
    return this.store.workspaces.list();
  }

  addAgent(input: AgentAddInput): Promise<Agent> {
    return this.store.agents.add(parseAgentAdd(input));
  }

  listAgents(): Promise<readonly Agent[]> {
    return this.store.agents.list();
  }

  addProject(input: ProjectAddInput): Promise<Project> {
    return this.store.projects.add(parseProjectAdd(input));
  }

  listProjects(): Promise<readonly Project[]> {
    return this.store.projects.list();
  }

  /**
   * Adds a task with its filesystem requirement and workspace binding. All input, including the
   * workspace's existence, is checked before the first write; workspaces are never removed, so
   * the check still holds when the requirements are written just after the task.
   */
  async addTask(input: TaskAddWithRequirementsInput): Promise<TaskWithRequirements> {
    const params = parseTaskAdd(input);
    const requiresFilesystem = optional(input.requiresFilesystem, (value) =>
      validateFlag('requires-filesystem', value),
    );
    const workspace = optional(input.workspace, (value) => validateName('workspace', value)) ?? null;
    if (workspace !== null) await this.getWorkspace(workspace);
    const task = await this.store.tasks.add(await triaged(this.store, params));
    const wanted = { key: task.key, requiresFilesystem: requiresFilesystem ?? false, workspace };
    if (!wanted.requiresFilesystem && wanted.workspace === null) return { task, requirements: wanted };
    return { task, requirements: await this.store.workspaceTasks.setRequirements(wanted) };
  }

  /**
   * Changes a task's filesystem requirement or workspace binding, keeping what is not given.
   * Read, then written whole: two operators changing different fields of one task at the same
   * moment can lose one change; the ledger shows both.
   */
  async setTaskRequirements(input: TaskRequirementsInput): Promise<TaskRequirements> {
    const key = validateKey(input.key);
    const requiresFilesystem = optional(input.requiresFilesystem, (value) =>
      validateFlag('requires-filesystem', value),
    );
    const workspace = optional(input.workspace, (value) =>
      value === null ? null : validateName('workspace', value),
    );
    const current = await this.store.workspaceTasks.get(key);
    if (current === null) throw new NotFoundError('task', key, 'add it with `baton task add`');
    if (requiresFilesystem === undefined && workspace === undefined) return current;
    return this.store.workspaceTasks.setRequirements({
      key,
      requiresFilesystem: requiresFilesystem ?? current.requiresFilesystem,
      workspace: workspace === undefined ? current.workspace : workspace,
    });
  }

  /**
   * Resolves the task's workspace plan by the decision table of core/workspace-plan.ts, for the
   * given agent or else the task's assignee when it names an agent. Throws
   * WorkspaceConfigurationError when the run needs a workspace and none is bound. `task`, when
   * given, is the task's read the caller has already sent (a run reads it for its texts too).
   */
  async plan(input: PlanInput, task?: Promise<Task | null>): Promise<PlanDetail> {
    const key = validateKey(input.key);
    const agent = input.agent === undefined ? undefined : validateName('agent', input.agent);
    return planDetail(this.store, key, agent, lookups(this.store), task);
  }

  private async getWorkspace(name: string): Promise<Workspace> {
    const workspace = await this.store.workspaces.get(name);
    if (workspace === null) throw new NotFoundError('workspace', name, 'add it with `baton workspace add`');
    return workspace;
  }
}

/** Reads of bound things, each made once per planner. */
interface Lookups {
  agent(name: string): Promise<Agent | null>;
  project(name: string): Promise<Project | null>;
  workspace(name: string): Promise<Workspace | null>;
}

function lookups(store: Store): Lookups {
  const memo = <T>(get: (name: string) => Promise<T>): ((name: string) => Promise<T>) => {
    const seen = new Map<string, Promise<T>>();
    return (name) => {
      let found = seen.get(name);
      if (found === undefined) {
        found = get(name);
        seen.set(name, found);
      }
      return found;
    };
  };
  return {
    agent: memo((name) => store.agents.get(name)),
    project: memo((name) => store.projects.get(name)),
    workspace: memo((name) => store.workspaces.get(name)),
  };
}

/**
 * The plan and what it was resolved from, for the agent `named` or else the task's assignee when
 * that names an agent, or else none.
 */
async function planDetail(
  store: Store,
  key: string,
  named: string | undefined,
  look: Lookups,
  read: Promise<Task | null> = store.tasks.get(key),
): Promise<PlanDetail> {
  // Read together: one round trip, not two, on a run's path from placement to spawn.
  const [task, requirements] = await Promise.all([read, store.workspaceTasks.get(key)]);
  if (task === null) throw new NotFoundError('task', key, 'add it with `baton task add`');
  assert(requirements !== null, 'a task that exists has requirements');
  const agent = named === undefined ? await assignee(task, look) : await look.agent(named);
  if (named !== undefined && agent === null)
    throw new NotFoundError('agent', named, 'add it with `baton agent add`');
  const project = task.project === null ? null : await look.project(task.project);
  const bound = [requirements.workspace, agent?.workspace ?? null, project?.primaryWorkspace ?? null];
  const names = [...new Set(bound.filter((name): name is string => name !== null))];
  const workspaces = await Promise.all(
    names.map(async (name) => {
      const workspace = await look.workspace(name);
      if (workspace === null) throw new NotFoundError('workspace', name, 'add it with `baton workspace add`');
      return workspace;
    }),
  );
  const plan = resolveWorkspacePlan({ task: requirements, agent, project, workspaces });
  return { plan, requirements, agent, project };
}

/** The task's assignee when that names an agent. */
function assignee(task: Task, look: Lookups): Promise<Agent | null> {
  return task.assignee === null ? Promise.resolve(null) : look.agent(task.assignee);
}
