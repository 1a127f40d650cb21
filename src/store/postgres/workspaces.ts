/**
 * Workspaces, agents, projects, task requirements and workspace locks on PostgreSQL. Each write
 * is one data-modifying statement that makes the change and appends its audit row; when it
 * matches nothing, a second read explains why (taken, not found, held, fenced).
 *
 * A lock grant locks the workspace row FOR UPDATE first, which under READ COMMITTED yields the
 * newest lock epoch after any wait, so two acquirers are serialised on it and epochs only grow.
 * The insert into workspace_locks is ON CONFLICT DO NOTHING on the primary key, the one-live-
 * lock constraint, so the second acquirer inserts nothing and reads as `held`.
 */
import { assert } from '../../core/assert.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { LockHolder, LockReleaseResult, LockResult, WorkspaceLock } from '../../core/workspace-lock.js';
import type {
  Agent,
  Project,
  TaskRequirements,
  Workspace,
  WorkspaceKind,
} from '../../core/workspace-plan.js';
import type { LockAcquireParams, LockReleaseParams, WorkspaceStore } from '../workspace-store.js';
import type * as shared from '../rows.js';
import { lockOf } from '../rows.js';
import { NOW, PG, actorJson, hostOf, ms, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';
import { liveOrThrow } from './job-steps.js';

/** How often a grant that found the lock released under it is tried again. */
const RACE_RETRY_MAX = 100;

type LockRow = shared.LockRow<PgEncoding>;
const toLock = (row: LockRow): WorkspaceLock => lockOf(PG, row);

const LOCK_COLUMNS = 'workspace, job_id, session_id, epoch, acquired_at';
/** The task key of a job, for audit rows, given the job id as an SQL expression. */
const keyOfJob = (jobExpr: string): string =>
  `(SELECT t.key FROM jobs j JOIN tasks t ON t.id = j.task_id WHERE j.id = ${jobExpr})`;

const workspaceNotFound = (name: string): NotFoundError =>
  new NotFoundError('workspace', name, 'add it with `baton workspace add`');

const taken = (what: string, name: string): ConflictError =>
  new ConflictError(`${what} ${name} already exists`, `pick another name, or use ${what} ${name} as is`);

/** Every workspace group of the port, for spreading into the store. */
export function postgresWorkspaceGroups(exec: PgExecutor): WorkspaceStore {
  return {
    workspaces: postgresWorkspaces(exec),
    agents: postgresAgents(exec),
    projects: postgresProjects(exec),
    workspaceTasks: postgresWorkspaceTasks(exec),
    workspaceLocks: postgresWorkspaceLocks(exec),
  };
}

function postgresWorkspaces(exec: PgExecutor): WorkspaceStore['workspaces'] {
  type Row = { name: string; path: string; kind: string };
  const toWorkspace = (row: Row): Workspace => ({
    name: row.name,
    path: row.path,
    kind: row.kind as WorkspaceKind,
  });
  return {
    add: async (params) => {
      const row = await exec.one<Row>(
        `WITH w AS (
           INSERT INTO workspaces (name, path, kind, created_at)
           SELECT $1::text, $2::text, $3::text, ${NOW}
           ON CONFLICT (name) DO NOTHING
           RETURNING name, path, kind, created_at
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT created_at, 'workspace:added', $4::bigint, ${hostOf('$4::bigint')},
             jsonb_build_object('name', name, 'path', path, 'kind', kind) || ${actorJson('$5')}
           FROM w
         )
         SELECT name, path, kind FROM w`,
        [params.name, params.path, params.kind, params.by ?? null, params.actor ?? null],
      );
      if (row === undefined) throw taken('workspace', params.name);
      return toWorkspace(row);
    },
    get: async (name) => {
      const row = await exec.one<Row>(`SELECT name, path, kind FROM workspaces WHERE name = $1::text`, [
        name,
      ]);
      return row === undefined ? null : toWorkspace(row);
    },
    list: async () =>
      (await exec.rows<Row>(`SELECT name, path, kind FROM workspaces ORDER BY name`)).map(toWorkspace),
  };
}

function postgresAgents(exec: PgExecutor): WorkspaceStore['agents'] {
  const COLUMNS = 'name, role, department, workspace';
  return {
    add: async (params) => {
      const workspace = params.workspace ?? null;
      const row = await exec.one<Agent>(
        `WITH g AS (
           INSERT INTO agents (name, role, department, workspace, created_at)
           SELECT $1::text, $2::text, $3::text, $4::text, ${NOW}
           WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM workspaces WHERE name = $4::text)
           ON CONFLICT (name) DO NOTHING
           RETURNING ${COLUMNS}, created_at
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT created_at, 'agent:added', $5::bigint, ${hostOf('$5::bigint')},
             jsonb_build_object('name', name, 'role', role, 'department', department, 'workspace', workspace)
           FROM g
         )
         SELECT ${COLUMNS} FROM g`,
        [params.name, params.role, params.department ?? null, workspace, params.by ?? null],
      );
      if (row !== undefined) return row;
      if ((await exec.one(`SELECT 1 FROM agents WHERE name = $1::text`, [params.name])) !== undefined) {
        throw taken('agent', params.name);
      }
      assert(workspace !== null, 'an agent without a workspace is refused only when its name is taken');
      throw workspaceNotFound(workspace);
    },
    get: async (name) =>
      (await exec.one<Agent>(`SELECT ${COLUMNS} FROM agents WHERE name = $1::text`, [name])) ?? null,
    list: async () => exec.rows<Agent>(`SELECT ${COLUMNS} FROM agents ORDER BY name`),
  };
}

function postgresProjects(exec: PgExecutor): WorkspaceStore['projects'] {
  const COLUMNS = `name, primary_workspace AS "primaryWorkspace"`;
  return {
    add: async (params) => {
      const primary = params.primaryWorkspace ?? null;
      const row = await exec.one<Project>(
        `WITH p AS (
           INSERT INTO projects (name, primary_workspace, created_at)
           SELECT $1::text, $2::text, ${NOW}
           WHERE $2::text IS NULL OR EXISTS (SELECT 1 FROM workspaces WHERE name = $2::text)
           ON CONFLICT (name) DO NOTHING
           RETURNING name, primary_workspace, created_at
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT created_at, 'project:added', $3::bigint, ${hostOf('$3::bigint')},
             jsonb_build_object('name', name, 'primaryWorkspace', primary_workspace)
           FROM p
         )
         SELECT ${COLUMNS} FROM p`,
        [params.name, primary, params.by ?? null],
      );
      if (row !== undefined) return row;
      if ((await exec.one(`SELECT 1 FROM projects WHERE name = $1::text`, [params.name])) !== undefined) {
        throw taken('project', params.name);
      }
      assert(primary !== null, 'a project without a workspace is refused only when its name is taken');
      throw workspaceNotFound(primary);
    },
    get: async (name) =>
      (await exec.one<Project>(`SELECT ${COLUMNS} FROM projects WHERE name = $1::text`, [name])) ?? null,
    list: async () => exec.rows<Project>(`SELECT ${COLUMNS} FROM projects ORDER BY name`),
  };
}

function postgresWorkspaceTasks(exec: PgExecutor): WorkspaceStore['workspaceTasks'] {
  type Row = { key: string; requires_filesystem: boolean; workspace: string | null };
  const toRequirements = (row: Row): TaskRequirements => ({
    key: row.key,
    requiresFilesystem: row.requires_filesystem,
    workspace: row.workspace,
  });
  return {
    setRequirements: async (params) => {
      const row = await exec.one<Row>(
        `WITH t AS (
           UPDATE tasks SET requires_filesystem = $2::boolean, workspace = $3::text
           WHERE key = $1::text
             AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM workspaces WHERE name = $3::text))
           RETURNING key, requires_filesystem, workspace
         ), a AS (
           INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
           SELECT ${NOW}, 'task:requirements-set', key, $4::bigint, ${hostOf('$4::bigint')},
             jsonb_build_object('requiresFilesystem', requires_filesystem, 'workspace', workspace)
           FROM t
         )
         SELECT key, requires_filesystem, workspace FROM t`,
        [params.key, params.requiresFilesystem, params.workspace, params.by ?? null],
      );
      if (row !== undefined) return toRequirements(row);
      if ((await exec.one(`SELECT 1 FROM tasks WHERE key = $1::text`, [params.key])) === undefined) {
        throw new NotFoundError('task', params.key, 'add it with `baton task add`');
      }
      assert(
        params.workspace !== null,
        'requirements without a workspace are refused only for an unknown task',
      );
      throw workspaceNotFound(params.workspace);
    },
    get: async (key) => {
      const row = await exec.one<Row>(
        `SELECT key, requires_filesystem, workspace FROM tasks WHERE key = $1::text`,
        [key],
      );
      return row === undefined ? null : toRequirements(row);
    },
  };
}

/** What a refused lock operation needs to explain itself, read after the guarded statement. */
interface LockStateRow {
  workspace_found: boolean;
  session_state: string | null;
  job_found: boolean;
  holder_host: string | null;
  lock_job_id: number | null;
  lock_session_id: number | null;
  lock_epoch: number | null;
  lock_acquired_at: Date | null;
}

async function lockState(exec: PgExecutor, workspace: string, session: number, jobId: number | null) {
  const row = await exec.one<LockStateRow>(
    `SELECT w.name IS NOT NULL AS workspace_found, s.state AS session_state,
       ($3::bigint IS NULL OR EXISTS (SELECT 1 FROM jobs WHERE id = $3::bigint)) AS job_found,
       hs.host AS holder_host, l.job_id AS lock_job_id, l.session_id AS lock_session_id,
       l.epoch AS lock_epoch, l.acquired_at AS lock_acquired_at
     FROM (SELECT 1) one
     LEFT JOIN workspaces w ON w.name = $1::text
     LEFT JOIN sessions s ON s.id = $2::bigint
     LEFT JOIN workspace_locks l ON l.workspace = $1::text
     LEFT JOIN sessions hs ON hs.id = l.session_id`,
    [workspace, session, jobId],
  );
  assert(row !== undefined, 'lockState returns exactly one row');
  return row;
}

function holderOf(row: LockStateRow): LockHolder | null {
  if (row.lock_session_id === null || row.lock_epoch === null || row.lock_acquired_at === null) return null;
  return {
    session: row.lock_session_id,
    host: row.holder_host ?? '',
    jobId: row.lock_job_id,
    since: ms(row.lock_acquired_at),
    epoch: row.lock_epoch,
  };
}

const ACQUIRE = `
WITH s AS (
  SELECT id, host FROM sessions WHERE id = $2::bigint AND state = 'live' FOR KEY SHARE
), w AS (
  SELECT name, lock_epoch FROM workspaces
  WHERE name = $1::text AND EXISTS (SELECT 1 FROM s)
    AND ($3::bigint IS NULL OR EXISTS (SELECT 1 FROM jobs WHERE id = $3::bigint))
  FOR UPDATE
), n AS (
  SELECT ${NOW} AS t FROM (SELECT count(*) FROM w) locked
), l AS (
  INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
  SELECT w.name, $3::bigint, s.id, w.lock_epoch + 1, n.t FROM w, s, n
  ON CONFLICT (workspace) DO NOTHING
  RETURNING ${LOCK_COLUMNS}
), e AS (
  UPDATE workspaces SET lock_epoch = l.epoch FROM l WHERE workspaces.name = l.workspace
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT l.acquired_at, 'lock:acquired', ${keyOfJob('l.job_id')}, l.job_id, l.session_id, s.host,
    l.epoch, jsonb_build_object('workspace', l.workspace)
  FROM l, s
)
SELECT ${LOCK_COLUMNS} FROM l`;

/** Deletes the locks matched by `where` and audits each; `$1` .. `$3` are free for it. */
const releaseWhere = (where: string, outcome: string): string => `
WITH l AS (
  DELETE FROM workspace_locks WHERE ${where} RETURNING ${LOCK_COLUMNS}
), n AS (
  SELECT ${NOW} AS t
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT n.t, 'lock:released', ${keyOfJob('l.job_id')}, l.job_id, l.session_id,
    ${hostOf('l.session_id')}, l.epoch, jsonb_build_object('workspace', l.workspace, 'outcome', ${outcome})
  FROM l, n ORDER BY l.workspace
)
SELECT ${LOCK_COLUMNS} FROM l ORDER BY workspace`;

function postgresWorkspaceLocks(exec: PgExecutor): WorkspaceStore['workspaceLocks'] {
  return {
    acquire: (params) => acquireLock(exec, params),
    release: (params) => releaseLock(exec, params),
    current: async (workspace) => {
      const row = await exec.one<Omit<LockRow, 'workspace'> & { found: boolean; workspace: string | null }>(
        `SELECT w.name IS NOT NULL AS found, l.workspace, l.job_id, l.session_id, l.epoch, l.acquired_at
         FROM (SELECT 1) one
         LEFT JOIN workspaces w ON w.name = $1::text
         LEFT JOIN workspace_locks l ON l.workspace = $1::text`,
        [workspace],
      );
      if (row === undefined || !row.found) throw workspaceNotFound(workspace);
      return row.workspace === null ? null : toLock({ ...row, workspace: row.workspace });
    },
    releaseBySession: async (params) => {
      const outcome = params.outcome ?? 'recovered';
      const rows = await exec.rows<LockRow>(releaseWhere('session_id = $1::bigint', '$2::text'), [
        params.session,
        outcome,
      ]);
      const known = async (): Promise<boolean> =>
        (await exec.one(`SELECT 1 FROM sessions WHERE id = $1::bigint`, [params.session])) !== undefined;
      if (rows.length === 0 && !(await known())) {
        throw new NotFoundError('session', String(params.session), 'start one with `baton session start`');
      }
      return rows.map(toLock);
    },
    releaseJob: async (params) =>
      (
        await exec.rows<LockRow>(
          releaseWhere('job_id = $1::bigint AND session_id = $2::bigint', `'released'`),
          [params.jobId, params.session],
        )
      ).map(toLock),
  };
}

/** ACQUIRE, then, when it granted nothing, a read that says why (or a retry when the lock went meanwhile). */
async function acquireLock(exec: PgExecutor, params: LockAcquireParams): Promise<LockResult> {
  const jobId = params.jobId ?? null;
  for (let attempt = 1; ; attempt++) {
    const row = await exec.one<LockRow>(ACQUIRE, [params.workspace, params.session, jobId]);
    if (row !== undefined) return { ok: true, lock: toLock(row), granted: true };
    const state = await lockState(exec, params.workspace, params.session, jobId);
    if (!state.workspace_found) throw workspaceNotFound(params.workspace);
    liveOrThrow(params.session, state.session_state);
    if (!state.job_found) throw new NotFoundError('job', String(jobId));
    const holder = holderOf(state);
    if (holder !== null) {
      if (holder.session === params.session && holder.jobId === jobId) {
        const { session, epoch, since } = holder;
        const lock = { workspace: params.workspace, session, jobId, epoch, acquiredAt: since };
        return { ok: true, lock, granted: false };
      }
      return { ok: false, reason: 'held', holder };
    }
    // Released between the two statements: the workspace is free again, so take it again.
    assert(attempt < RACE_RETRY_MAX, 'a lock grant does not race forever');
  }
}

/** workspaceLocks.release: exactly (session, epoch)'s lock, else `fenced` with the current holder. */
async function releaseLock(exec: PgExecutor, params: LockReleaseParams): Promise<LockReleaseResult> {
  const where = 'workspace = $1::text AND session_id = $2::bigint AND epoch = $3::bigint';
  const rows = await exec.rows<LockRow>(releaseWhere(where, `'released'`), [
    params.workspace,
    params.session,
    params.epoch,
  ]);
  if (rows.length === 1) return { ok: true };
  const state = await lockState(exec, params.workspace, params.session, null);
  if (!state.workspace_found) throw workspaceNotFound(params.workspace);
  if (state.session_state === null) {
    throw new NotFoundError('session', String(params.session), 'start one with `baton session start`');
  }
  return { ok: false, reason: 'fenced', current: holderOf(state) };
}
