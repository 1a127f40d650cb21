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
import { fromSync, type SqliteRunner, type Sync } from './runner.js';
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

const toWorkspace = (r: WorkspaceRow): Workspace => ({
  name: r.name,
  path: r.path,
  kind: r.kind as WorkspaceKind,
});
const toAgent = (r: AgentRow): Agent => ({ ...r });
const toProject = (r: { name: string; primary_workspace: string | null }): Project => ({
  name: r.name,
  primaryWorkspace: r.primary_workspace,
});

/** Every workspace group of the port, for spreading into the store. */
export function sqliteWorkspaceGroups(run: SqliteRunner): WorkspaceStore {
  return {
    workspaces: fromSync(sqliteWorkspaces(run)),
    agents: fromSync(sqliteAgents(run)),
    projects: fromSync(sqliteProjects(run)),
    workspaceTasks: fromSync(sqliteWorkspaceTasks(run)),
    workspaceLocks: fromSync(sqliteWorkspaceLocks(run)),
  };
}

function workspaceRow(run: SqliteRunner, name: string): WorkspaceRow | undefined {
  return run.prepare('SELECT * FROM workspaces WHERE name = ?').get(name) as WorkspaceRow | undefined;
}

/** The workspace row, or NotFoundError saying how to add it. */
export function existingWorkspace(run: SqliteRunner, name: string): WorkspaceRow {
  const row = workspaceRow(run, name);
  if (row === undefined) throw new NotFoundError('workspace', name, 'add it with `baton workspace add`');
  return row;
}

function refuseTaken(run: SqliteRunner, table: 'workspaces' | 'agents' | 'projects', name: string): void {
  if (run.prepare(`SELECT 1 FROM ${table} WHERE name = ?`).get(name) !== undefined) {
    const what = table.slice(0, -1);
    throw new ConflictError(
      `${what} ${name} already exists`,
      `pick another name, or use ${what} ${name} as is`,
    );
  }
}

function sqliteWorkspaces(run: SqliteRunner): Sync<WorkspaceStore['workspaces']> {
  return {
    add: (p) =>
      run.write(() => {
        refuseTaken(run, 'workspaces', p.name);
        const now = run.now();
        run
          .prepare('INSERT INTO workspaces (name, path, kind, created_at) VALUES (?, ?, ?, ?)')
          .run(p.name, p.path, p.kind, now);
        const detail = withActor({ name: p.name, path: p.path, kind: p.kind }, p.actor);
        appendAudit(run, { at: now, type: 'workspace:added', session: p.by ?? null, detail });
        return toWorkspace(existingWorkspace(run, p.name));
      }),
    get: (name) =>
      run.read(() => {
        const row = workspaceRow(run, name);
        return row === undefined ? null : toWorkspace(row);
      }),
    list: () =>
      run.read(() =>
        (run.prepare('SELECT * FROM workspaces ORDER BY name').all() as WorkspaceRow[]).map(toWorkspace),
      ),
  };
}

function sqliteAgents(run: SqliteRunner): Sync<WorkspaceStore['agents']> {
  const COLUMNS = 'name, role, department, workspace';
  const get = (name: string): AgentRow | undefined =>
    run.prepare(`SELECT ${COLUMNS} FROM agents WHERE name = ?`).get(name) as AgentRow | undefined;
  return {
    add: (p) =>
      run.write(() => {
        refuseTaken(run, 'agents', p.name);
        const agent: Agent = {
          name: p.name,
          role: p.role,
          department: p.department ?? null,
          workspace: p.workspace ?? null,
        };
        if (agent.workspace !== null) existingWorkspace(run, agent.workspace);
        const now = run.now();
        run
          .prepare(
            'INSERT INTO agents (name, role, department, workspace, created_at) VALUES (?, ?, ?, ?, ?)',
          )
          .run(agent.name, agent.role, agent.department, agent.workspace, now);
        appendAudit(run, { at: now, type: 'agent:added', session: p.by ?? null, detail: { ...agent } });
        return agent;
      }),
    get: (name) =>
      run.read(() => {
        const row = get(name);
        return row === undefined ? null : toAgent(row);
      }),
    list: () =>
      run.read(() =>
        (run.prepare(`SELECT ${COLUMNS} FROM agents ORDER BY name`).all() as AgentRow[]).map(toAgent),
      ),
  };
}

function sqliteProjects(run: SqliteRunner): Sync<WorkspaceStore['projects']> {
  type Row = { name: string; primary_workspace: string | null };
  return {
    add: (p) =>
      run.write(() => {
        refuseTaken(run, 'projects', p.name);
        const project: Project = { name: p.name, primaryWorkspace: p.primaryWorkspace ?? null };
        if (project.primaryWorkspace !== null) existingWorkspace(run, project.primaryWorkspace);
        const now = run.now();
        run
          .prepare('INSERT INTO projects (name, primary_workspace, created_at) VALUES (?, ?, ?)')
          .run(project.name, project.primaryWorkspace, now);
        appendAudit(run, { at: now, type: 'project:added', session: p.by ?? null, detail: { ...project } });
        return project;
      }),
    get: (name) =>
      run.read(() => {
        const row = run.prepare('SELECT name, primary_workspace FROM projects WHERE name = ?').get(name);
        return row === undefined ? null : toProject(row as Row);
      }),
    list: () =>
      run.read(() =>
        (run.prepare('SELECT name, primary_workspace FROM projects ORDER BY name').all() as Row[]).map(
          toProject,
        ),
      ),
  };
}

function sqliteWorkspaceTasks(run: SqliteRunner): Sync<WorkspaceStore['workspaceTasks']> {
  const requirementsOf = (key: string): TaskRequirements | null => {
    const row = run.prepare('SELECT requires_filesystem, workspace FROM tasks WHERE key = ?').get(key) as
      { requires_filesystem: number; workspace: string | null } | undefined;
    if (row === undefined) return null;
    return { key, requiresFilesystem: row.requires_filesystem === 1, workspace: row.workspace };
  };
  return {
    setRequirements: (p) =>
      run.write(() => {
        if (taskRow(run, p.key) === undefined) {
          throw new NotFoundError('task', p.key, 'add it with `baton task add`');
        }
        if (p.workspace !== null) existingWorkspace(run, p.workspace);
        const now = run.now();
        run
          .prepare('UPDATE tasks SET requires_filesystem = ?, workspace = ? WHERE key = ?')
          .run(p.requiresFilesystem ? 1 : 0, p.workspace, p.key);
        appendAudit(run, {
          at: now,
          type: 'task:requirements-set',
          key: p.key,
          session: p.by ?? null,
          detail: { requiresFilesystem: p.requiresFilesystem, workspace: p.workspace },
        });
        return { key: p.key, requiresFilesystem: p.requiresFilesystem, workspace: p.workspace };
      }),
    get: (key) => run.read(() => requirementsOf(key)),
  };
}

function sqliteWorkspaceLocks(run: SqliteRunner): Sync<WorkspaceStore['workspaceLocks']> {
  return {
    acquire: (p) =>
      run.write((): LockResult => {
        const ws = existingWorkspace(run, p.workspace);
        sessionRow(run, p.session, true);
        const jobId = p.jobId ?? null;
        const key = keyOfJob(run, jobId);
        if (jobId !== null && key === null) throw new NotFoundError('job', String(jobId));
        const current = liveLock(run, ws.name);
        if (current !== undefined) {
          if (current.session_id === p.session && current.job_id === jobId) {
            return { ok: true, lock: toLock(current), granted: false };
          }
          return { ok: false, reason: 'held', holder: toHolder(current) };
        }
        const grant = { workspace: ws.name, lockEpoch: ws.lock_epoch, session: p.session, jobId, key };
        return { ok: true, lock: grantLock(run, run.now(), grant), granted: true };
      }),
    release: (p) =>
      run.write((): LockReleaseResult => {
        existingWorkspace(run, p.workspace);
        sessionRow(run, p.session, false);
        const current = liveLock(run, p.workspace);
        if (current === undefined || current.session_id !== p.session || current.epoch !== p.epoch) {
          return { ok: false, reason: 'fenced', current: current === undefined ? null : toHolder(current) };
        }
        releaseLock(run, run.now(), current, 'released');
        return { ok: true };
      }),
    current: (workspace) =>
      run.read(() => {
        existingWorkspace(run, workspace);
        const row = liveLock(run, workspace);
        return row === undefined ? null : toLock(row);
      }),
    releaseBySession: (p) =>
      run.write(() => {
        sessionRow(run, p.session, false);
        return releaseSessionLocks(run, run.now(), p.session, p.outcome ?? 'recovered').map(toLock);
      }),
    releaseJob: (p) =>
      run.write(() => releaseJobLocks(run, run.now(), p.jobId, 'released', p.session).map(toLock)),
  };
}
