/** Maps SQLite rows (times as integer milliseconds) to domain values (store/rows.ts). */
import type { AuditEntry, AuditType } from '../../core/audit-event.js';
import type { Claim, Holder } from '../../core/claim.js';
import type { Job } from '../../core/job.js';
import type { Lease } from '../../core/lease.js';
import { SESSION_TTL_FALLBACK_MS, type Session } from '../../core/session.js';
import type { Task } from '../../core/task.js';
import type * as rows from '../rows.js';
import {
  auditOf,
  claimOf,
  jobOf,
  leaseOf,
  sessionOf,
  taskOf,
  type Encoding,
  type RowDecoder,
} from '../rows.js';
import type { SqliteExecutor } from './executor.js';
import { actingToken } from '../actor.js';

/**
 * How better-sqlite3 returns the columns the engines store differently (store/rows.ts): times as
 * integer milliseconds, booleans as 0 or 1, JSON as text.
 */
export interface SqliteEncoding extends Encoding {
  readonly time: number;
  readonly flag: number;
  readonly json: string;
}

/**
 * Whether the session row `session` has passed its TTL (SESSION_TTL_FALLBACK_MS when it declared
 * none) on the database clock `@now`, or is no longer live: its claims may be taken over (SQL, for
 * a statement bound with `now`). PostgreSQL: EXPIRED (postgres/rows.ts).
 */
export const EXPIRED = (session: string): string =>
  `(${session}.state <> 'live'
    OR @now - ${session}.heartbeat_at > coalesce(${session}.ttl_ms, ${SESSION_TTL_FALLBACK_MS}))`;

export const SQLITE: RowDecoder<SqliteEncoding> = {
  instant: (value) => value,
  flag: (value) => value === 1,
  json: (value) => JSON.parse(value) as unknown,
};

export type TaskRow = rows.TaskRow<SqliteEncoding>;
export type SessionRow = rows.SessionRow<SqliteEncoding>;
export type ClaimRow = rows.ClaimRow<SqliteEncoding>;
export type JobRow = rows.JobRow<SqliteEncoding>;
export type LeaseRow = rows.LeaseRow<SqliteEncoding>;
export type AuditRow = rows.AuditRow<SqliteEncoding>;

export const toTask = (row: TaskRow): Task => taskOf(SQLITE, row);
export const toSession = (row: SessionRow): Session => sessionOf(SQLITE, row);
export const toClaim = (row: ClaimRow): Claim => claimOf(SQLITE, row);
export const toJob = (row: JobRow): Job => jobOf(SQLITE, row);
export const toLease = (row: LeaseRow): Lease => leaseOf(SQLITE, row);
export const toAudit = (row: AuditRow): AuditEntry => auditOf(SQLITE, row);

/** The holder of a task's live claim, as told to a loser. */
export function holderOf(exec: SqliteExecutor, taskId: number): Holder | null {
  const row = exec
    .prepare(
      `SELECT c.session_id, s.host, c.claimed_at, c.epoch FROM claims c
       JOIN sessions s ON s.id = c.session_id
       WHERE c.task_id = ? AND c.released_at IS NULL`,
    )
    .get(taskId) as { session_id: number; host: string; claimed_at: number; epoch: number } | undefined;
  return row === undefined
    ? null
    : { session: row.session_id, host: row.host, since: row.claimed_at, epoch: row.epoch };
}

export interface AuditInsert {
  readonly at: number;
  readonly type: AuditType;
  readonly key?: string | null;
  readonly jobId?: number | null;
  readonly session?: number | null;
  readonly epoch?: number | null;
  readonly detail?: Record<string, unknown>;
}

/**
 * Appends a ledger row inside the caller's transaction; the host is the session's, the token the
 * one the caller acts with (actor.ts).
 */
export function appendAudit(exec: SqliteExecutor, insert: AuditInsert): void {
  exec
    .prepare(
      `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail, token_id)
       VALUES (?, ?, ?, ?, ?, (SELECT host FROM sessions WHERE id = ?), ?, ?, ?)`,
    )
    .run(
      insert.at,
      insert.type,
      insert.key ?? null,
      insert.jobId ?? null,
      insert.session ?? null,
      insert.session ?? null,
      insert.epoch ?? null,
      JSON.stringify(insert.detail ?? {}),
      actingToken(),
    );
}
