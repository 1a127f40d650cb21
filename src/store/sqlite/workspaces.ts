/**
 * Workspaces, agents, projects, task requirements and workspace locks on SQLite. Each method is
 * one BEGIN IMMEDIATE transaction: the single writer makes check-then-write atomic, and the lock
 * table's primary key backs the guard all the same.
 */
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { LockReleaseResult, LockResult } from '../../core/workspace-lock.js';
import type {
  Agent,
  Project,
  TaskRequirements,
  Workspace,
  WorkspaceKind,
} from '../../core/workspace-plan.js';
import type { WorkspaceStore } from '../workspace-store.js';
import {
  grantLock,
  keyOfJob,
  liveLock,
  releaseJobLocks,
  releaseLock,
  releaseSessionLocks,
  toHolder,
  toLock,
} from './locks.js';
import { withActor } from '../actor.js';
import { appendAudit } from './rows.js';
import { fromSync, type SqliteExecutor, type Sync } from './executor.js';
import { sessionRow, taskRow } from './tasks-claims.js';

interface WorkspaceRow {
  name: string;
  path: string;
  kind: string;
  lock_epoch: number;
}

interface AgentRow {
  name: string;
  role: string;
  department: string | null;
  workspace: string | null;
}

const toWorkspace = (row: WorkspaceRow): Workspace => ({
  name: row.name,
  path: row.path,
  kind: row.kind as WorkspaceKind,
});
const toAgent = (row: AgentRow): Agent => ({ ...row });
const toProject = (row: { name: string; primary_workspace: string | null }): Project => ({
  name: row.name,
  primaryWorkspace: row.primary_workspace,
});

/** Every workspace group of the port, for spreading into the store. */
export function sqliteWorkspaceGroups(exec: SqliteExecutor): WorkspaceStore {
  return {
    workspaces: fromSync(sqliteWorkspaces(exec)),
    agents: fromSync(sqliteAgents(exec)),
    projects: fromSync(sqliteProjects(exec)),
    workspaceTasks: fromSync(sqliteWorkspaceTasks(exec)),
    workspaceLocks: fromSync(sqliteWorkspaceLocks(exec)),
  };
}

function workspaceRow(exec: SqliteExecutor, name: string): WorkspaceRow | undefined {
  return exec.prepare('SELECT * FROM workspaces WHERE name = ?').get(name) as WorkspaceRow | undefined;
}

/** The workspace row, or NotFoundError saying how to add it. */
export function existingWorkspace(exec: SqliteExecutor, name: string): WorkspaceRow {
  const row = workspaceRow(exec, name);
  if (row === undefined) throw new NotFoundError('workspace', name, 'add it with `baton workspace add`');
  return row;
}

function refuseTaken(exec: SqliteExecutor, table: 'workspaces' | 'agents' | 'projects', name: string): void {
  if (exec.prepare(`SELECT 1 FROM ${table} WHERE name = ?`).get(name) !== undefined) {
    const what = table.slice(0, -1);
    throw new ConflictError(
      `${what} ${name} already exists`,
      `pick another name, or use ${what} ${name} as is`,
    );
  }
}

function sqliteWorkspaces(exec: SqliteExecutor): Sync<WorkspaceStore['workspaces']> {
  return {
    add: (params) =>
      exec.write(() => {
        refuseTaken(exec, 'workspaces', params.name);
        const now = exec.now();
        exec
          .prepare('INSERT INTO workspaces (name, path, kind, created_at) VALUES (?, ?, ?, ?)')
          .run(params.name, params.path, params.kind, now);
        const detail = withActor({ name: params.name, path: params.path, kind: params.kind }, params.actor);
        appendAudit(exec, { at: now, type: 'workspace:added', session: params.by ?? null, detail });
        return toWorkspace(existingWorkspace(exec, params.name));
      }),
    get: (name) =>
      exec.read(() => {
        const row = workspaceRow(exec, name);
        return row === undefined ? null : toWorkspace(row);
      }),
    list: () =>
      exec.read(() =>
        (exec.prepare('SELECT * FROM workspaces ORDER BY name').all() as WorkspaceRow[]).map(toWorkspace),
      ),
  };
}

function sqliteAgents(exec: SqliteExecutor): Sync<WorkspaceStore['agents']> {
  const COLUMNS = 'name, role, department, workspace';
  const get = (name: string): AgentRow | undefined =>
    exec.prepare(`SELECT ${COLUMNS} FROM agents WHERE name = ?`).get(name) as AgentRow | undefined;
  return {
    add: (params) =>
      exec.write(() => {
        refuseTaken(exec, 'agents', params.name);
        const agent: Agent = {
          name: params.name,
          role: params.role,
          department: params.department ?? null,
          workspace: params.workspace ?? null,
        };
        if (agent.workspace !== null) existingWorkspace(exec, agent.workspace);
        const now = exec.now();
        exec
          .prepare(
            'INSERT INTO agents (name, role, department, workspace, created_at) VALUES (?, ?, ?, ?, ?)',
          )
          .run(agent.name, agent.role, agent.department, agent.workspace, now);
        appendAudit(exec, { at: now, type: 'agent:added', session: params.by ?? null, detail: { ...agent } });
        return agent;
      }),
    get: (name) =>
      exec.read(() => {
        const row = get(name);
        return row === undefined ? null : toAgent(row);
      }),
    list: () =>
      exec.read(() =>
        (exec.prepare(`SELECT ${COLUMNS} FROM agents ORDER BY name`).all() as AgentRow[]).map(toAgent),
      ),
  };
}

function sqliteProjects(exec: SqliteExecutor): Sync<WorkspaceStore['projects']> {
  type Row = { name: string; primary_workspace: string | null };
  return {
    add: (params) =>
      exec.write(() => {
        refuseTaken(exec, 'projects', params.name);
        const project: Project = { name: params.name, primaryWorkspace: params.primaryWorkspace ?? null };
        if (project.primaryWorkspace !== null) existingWorkspace(exec, project.primaryWorkspace);
        const now = exec.now();
        exec
          .prepare('INSERT INTO projects (name, primary_workspace, created_at) VALUES (?, ?, ?)')
          .run(project.name, project.primaryWorkspace, now);
        appendAudit(exec, {
          at: now,
          type: 'project:added',
          session: params.by ?? null,
          detail: { ...project },
        });
        return project;
      }),
    get: (name) =>
      exec.read(() => {
        const row = exec.prepare('SELECT name, primary_workspace FROM projects WHERE name = ?').get(name);
        return row === undefined ? null : toProject(row as Row);
      }),
    list: () =>
      exec.read(() =>
        (exec.prepare('SELECT name, primary_workspace FROM projects ORDER BY name').all() as Row[]).map(
          toProject,
        ),
      ),
  };
}

function sqliteWorkspaceTasks(exec: SqliteExecutor): Sync<WorkspaceStore['workspaceTasks']> {
  const requirementsOf = (key: string): TaskRequirements | null => {
    const row = exec.prepare('SELECT requires_filesystem, workspace FROM tasks WHERE key = ?').get(key) as
      { requires_filesystem: number; workspace: string | null } | undefined;
    if (row === undefined) return null;
    return { key, requiresFilesystem: row.requires_filesystem === 1, workspace: row.workspace };
  };
  return {
    setRequirements: (params) =>
      exec.write(() => {
        if (taskRow(exec, params.key) === undefined) {
          throw new NotFoundError('task', params.key, 'add it with `baton task add`');
        }
        if (params.workspace !== null) existingWorkspace(exec, params.workspace);
        const now = exec.now();
        exec
          .prepare('UPDATE tasks SET requires_filesystem = ?, workspace = ? WHERE key = ?')
          .run(params.requiresFilesystem ? 1 : 0, params.workspace, params.key);
        appendAudit(exec, {
          at: now,
          type: 'task:requirements-set',
          key: params.key,
          session: params.by ?? null,
          detail: { requiresFilesystem: params.requiresFilesystem, workspace: params.workspace },
        });
        return {
          key: params.key,
          requiresFilesystem: params.requiresFilesystem,
          workspace: params.workspace,
        };
      }),
    get: (key) => exec.read(() => requirementsOf(key)),
  };
}

function sqliteWorkspaceLocks(exec: SqliteExecutor): Sync<WorkspaceStore['workspaceLocks']> {
  return {
    acquire: (params) =>
      exec.write((): LockResult => {
        const ws = existingWorkspace(exec, params.workspace);
        sessionRow(exec, params.session, true);
        const jobId = params.jobId ?? null;
        const key = keyOfJob(exec, jobId);
        if (jobId !== null && key === null) throw new NotFoundError('job', String(jobId));
        const current = liveLock(exec, ws.name);
        if (current !== undefined) {
          if (current.session_id === params.session && current.job_id === jobId) {
            return { ok: true, lock: toLock(current), granted: false };
          }
          return { ok: false, reason: 'held', holder: toHolder(current) };
        }
        const grant = { workspace: ws.name, lockEpoch: ws.lock_epoch, session: params.session, jobId, key };
        return { ok: true, lock: grantLock(exec, exec.now(), grant), granted: true };
      }),
    release: (params) =>
      exec.write((): LockReleaseResult => {
        existingWorkspace(exec, params.workspace);
        sessionRow(exec, params.session, false);
        const current = liveLock(exec, params.workspace);
        if (
          current === undefined ||
          current.session_id !== params.session ||
          current.epoch !== params.epoch
        ) {
          return { ok: false, reason: 'fenced', current: current === undefined ? null : toHolder(current) };
        }
        releaseLock(exec, exec.now(), current, 'released');
        return { ok: true };
      }),
    current: (workspace) =>
      exec.read(() => {
        existingWorkspace(exec, workspace);
        const row = liveLock(exec, workspace);
        return row === undefined ? null : toLock(row);
      }),
    releaseBySession: (params) =>
      exec.write(() => {
        sessionRow(exec, params.session, false);
        return releaseSessionLocks(exec, exec.now(), params.session, params.outcome ?? 'recovered').map(
          toLock,
        );
      }),
    releaseJob: (params) =>
      exec.write(() =>
        releaseJobLocks(exec, exec.now(), params.jobId, 'released', params.session).map(toLock),
      ),
  };
}
