/**
 * The part of the port the workspace concurrency model uses: workspaces, the agents and projects
 * bound to them, each task's filesystem requirement and explicit binding, and exclusive locks on
 * workspaces fenced by an epoch. Every change is one atomic step, audited with it.
 */
import type { JobId } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { LockOutcome, LockReleaseResult, LockResult, WorkspaceLock } from '../core/workspace-lock.js';
import type { Agent, Project, TaskRequirements, Workspace, WorkspaceKind } from '../core/workspace-plan.js';

export interface WorkspaceAddParams {
  readonly name: string;
  readonly path: string;
  readonly kind: WorkspaceKind;
  readonly by?: SessionId | undefined;
  /** Who asked, in words: `by` in the `workspace:added` row. */
  readonly actor?: string | undefined;
}

export interface AgentAddParams {
  readonly name: string;
  readonly role: string;
  readonly department?: string | null | undefined;
  readonly workspace?: string | null | undefined;
  readonly by?: SessionId | undefined;
}

export interface ProjectAddParams {
  readonly name: string;
  readonly primaryWorkspace?: string | null | undefined;
  readonly by?: SessionId | undefined;
}

export interface TaskRequirementsParams {
  readonly key: string;
  readonly requiresFilesystem: boolean;
  /** The workspace the task must run in, or null for none. */
  readonly workspace: string | null;
  readonly by?: SessionId | undefined;
}

export interface LockAcquireParams {
  readonly workspace: string;
  readonly session: SessionId;
  /** The run the lock is for; the holder may take it again for the same run. */
  readonly jobId?: JobId | null | undefined;
}

export interface LockReleaseParams {
  readonly workspace: string;
  readonly session: SessionId;
  readonly epoch: number;
}

export interface LockReleaseBySessionParams {
  readonly session: SessionId;
  /** `recovered` (default) when the session stopped heartbeating, `abandoned` when it ended. */
  readonly outcome?: Exclude<LockOutcome, 'released'> | undefined;
}

export interface WorkspaceStore {
  readonly workspaces: {
    /** Registers a workspace; ConflictError when the name is taken. */
    add(params: WorkspaceAddParams): Promise<Workspace>;
    get(name: string): Promise<Workspace | null>;
    /** Every workspace, by name. */
    list(): Promise<readonly Workspace[]>;
  };

  readonly agents: {
    /** Registers an agent; ConflictError when the name is taken, NotFoundError for its workspace. */
    add(params: AgentAddParams): Promise<Agent>;
    get(name: string): Promise<Agent | null>;
    list(): Promise<readonly Agent[]>;
  };

  readonly projects: {
    /** Registers a project; ConflictError when the name is taken, NotFoundError for its workspace. */
    add(params: ProjectAddParams): Promise<Project>;
    get(name: string): Promise<Project | null>;
    list(): Promise<readonly Project[]>;
  };

  readonly workspaceTasks: {
    /** Sets a task's filesystem requirement and binding; NotFoundError for the task or workspace. */
    setRequirements(params: TaskRequirementsParams): Promise<TaskRequirements>;
    /** The task's requirements, or null for an unknown task. */
    get(key: string): Promise<TaskRequirements | null>;
  };

  readonly workspaceLocks: {
    /**
     * Grants the workspace to the session when no live lock exists, bumping the workspace's lock
     * epoch; returns the existing lock (granted: false) when the same session holds it for the
     * same job; `held` with the holder otherwise. NotFoundError for an unknown workspace, session
     * or job; FencedError for a session that is not live.
     */
    acquire(params: LockAcquireParams): Promise<LockResult>;
    /** Releases the lock only if (session, epoch) is the live lock; `fenced` otherwise. */
    release(params: LockReleaseParams): Promise<LockReleaseResult>;
    /** The live lock on the workspace, or null; NotFoundError for an unknown workspace. */
    current(workspace: string): Promise<WorkspaceLock | null>;
    /** Releases every lock the session holds (recovery, session end); returns them. */
    releaseBySession(params: LockReleaseBySessionParams): Promise<readonly WorkspaceLock[]>;
    /**
     * Releases the locks the session holds for the job (`released`), returning them: the
     * runner's last step of a run, once its agent's process tree is dead. A job's finish or
     * requeue has released its lock already (then this releases nothing); a cancel of a running
     * job leaves it to this, so the next run cannot start while the cancelled agent still works.
     */
    releaseJob(params: {
      readonly jobId: JobId;
      readonly session: SessionId;
    }): Promise<readonly WorkspaceLock[]>;
  };
}
