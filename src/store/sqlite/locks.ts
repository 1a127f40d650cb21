/**
 * Workspace lock rows on SQLite, for use inside a caller's BEGIN IMMEDIATE transaction: the
 * grant shared by workspaceLocks.acquire and a placement that locks, and the release shared by
 * a lock's own release, its job's end (finish, cancel, requeue) and its session's end or rescue.
 * Every grant and release appends its ledger row in the same transaction.
 */
import type { LockHolder, LockOutcome, WorkspaceLock } from '../../core/workspace-lock.js';
import type * as shared from '../rows.js';
import { lockOf } from '../rows.js';
import { SQLITE, appendAudit, type SqliteEncoding } from './rows.js';
import type { SqliteExecutor } from './executor.js';

/** A lock row with its holder's host. */
export interface LockRow extends shared.LockRow<SqliteEncoding> {
  host: string;
}

export const toLock = (row: LockRow): WorkspaceLock => lockOf(SQLITE, row);

export const toHolder = (row: LockRow): LockHolder => ({
  session: row.session_id,
  host: row.host,
  jobId: row.job_id,
  since: row.acquired_at,
  epoch: row.epoch,
});

const LOCK_SELECT = `SELECT l.*, s.host FROM workspace_locks l JOIN sessions s ON s.id = l.session_id`;

/** The live lock on the workspace, with its holder's host. */
export function liveLock(exec: SqliteExecutor, workspace: string): LockRow | undefined {
  return exec.prepare(`${LOCK_SELECT} WHERE l.workspace = ?`).get(workspace) as LockRow | undefined;
}

/** The task key of a job, for ledger rows. */
export function keyOfJob(exec: SqliteExecutor, jobId: number | null): string | null {
  if (jobId === null) return null;
  const row = exec
    .prepare('SELECT t.key FROM jobs j JOIN tasks t ON t.id = j.task_id WHERE j.id = ?')
    .get(jobId);
  return (row as { key: string } | undefined)?.key ?? null;
}

/**
 * Grants the (free) workspace to the session for the job: the next lock epoch, the lock row and
 * `lock:acquired`. The caller has checked that no live lock exists; the primary key backs it.
 */
export function grantLock(
  exec: SqliteExecutor,
  now: number,
  params: { workspace: string; lockEpoch: number; session: number; jobId: number | null; key: string | null },
): WorkspaceLock {
  const epoch = params.lockEpoch + 1;
  exec.prepare('UPDATE workspaces SET lock_epoch = ? WHERE name = ?').run(epoch, params.workspace);
  exec
    .prepare(
      `INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
       VALUES (?, ?, ?, ?, ?)`,
    )
    .run(params.workspace, params.jobId, params.session, epoch, now);
  appendAudit(exec, {
    at: now,
    type: 'lock:acquired',
    key: params.key,
    jobId: params.jobId,
    session: params.session,
    epoch,
    detail: { workspace: params.workspace },
  });
  return {
    workspace: params.workspace,
    session: params.session,
    jobId: params.jobId,
    epoch,
    acquiredAt: now,
  };
}

/** Deletes the given live locks, each audited `lock:released` with the outcome, in the order given. */
function release(exec: SqliteExecutor, now: number, rows: LockRow[], outcome: LockOutcome): LockRow[] {
  for (const row of rows) {
    exec
      .prepare('DELETE FROM workspace_locks WHERE workspace = ? AND epoch = ?')
      .run(row.workspace, row.epoch);
    appendAudit(exec, {
      at: now,
      type: 'lock:released',
      key: keyOfJob(exec, row.job_id),
      jobId: row.job_id,
      session: row.session_id,
      epoch: row.epoch,
      detail: { workspace: row.workspace, outcome },
    });
  }
  return rows;
}

/** Releases one lock row read in this transaction. */
export function releaseLock(exec: SqliteExecutor, now: number, lock: LockRow, outcome: LockOutcome): void {
  release(exec, now, [lock], outcome);
}

/** Releases every lock the session holds (its end, or its rescue); returns them by workspace. */
export function releaseSessionLocks(
  exec: SqliteExecutor,
  now: number,
  session: number,
  outcome: LockOutcome,
): LockRow[] {
  const rows = exec
    .prepare(`${LOCK_SELECT} WHERE l.session_id = ? ORDER BY l.workspace`)
    .all(session) as LockRow[];
  return release(exec, now, rows, outcome);
}

/**
 * Releases the locks taken for the job (by `session` only, when given), in the same transaction
 * as the job's end or requeue; returns them by workspace.
 */
export function releaseJobLocks(
  exec: SqliteExecutor,
  now: number,
  jobId: number,
  outcome: LockOutcome,
  session: number | null = null,
): LockRow[] {
  const rows = exec
    .prepare(`${LOCK_SELECT} WHERE l.job_id = ? AND (? IS NULL OR l.session_id = ?) ORDER BY l.workspace`)
    .all(jobId, session, session) as LockRow[];
  return release(exec, now, rows, outcome);
}
