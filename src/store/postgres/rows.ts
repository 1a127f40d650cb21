/**
 * Maps PostgreSQL rows to domain values, and holds the SQL fragments every statement shares.
 * Times are timestamptz truncated to the millisecond when written, so the JS Date pg returns
 * converts to an Instant without loss. bigint columns arrive as numbers (see postgres-store.ts).
 */
import type { AuditEntry } from '../../core/audit-event.js';
import type { Claim, Holder } from '../../core/claim.js';
import type { Job } from '../../core/job.js';
import type { Lease } from '../../core/lease.js';
import type { Session } from '../../core/session.js';
import type { Task } from '../../core/task.js';
import type { Instant } from '../../core/time.js';
import { assert } from '../../core/assert.js';
import { SESSION_TTL_FALLBACK_MS } from '../../core/session.js';
import type { TaskStateFacts } from '../task-refusal.js';
import type * as rows from '../rows.js';
import {
  auditOf,
  claimOf,
  jobOf,
  leaseOf,
  sessionOf,
  stateFactsOf,
  taskOf,
  type Encoding,
  type RowDecoder,
  type TaskStateColumns,
} from '../rows.js';
import type { Querier } from './executor.js';

/**
 * The database clock, in milliseconds. clock_timestamp() rather than statement_timestamp():
 * written into a SET list it is evaluated when the row is updated, after any row-lock wait
 * (EvalPlanQual recomputes it), so a grant can never be stamped earlier than the release it
 * waited for. Each statement evaluates it in one place and passes the value on.
 */
export const NOW = "date_trunc('milliseconds', clock_timestamp())";

/**
 * Whether the session row `s` has passed its TTL (SESSION_TTL_FALLBACK_MS when it declared none)
 * on the database clock, or is no longer live: its claims may be taken over.
 */
export const EXPIRED = (session: string): string =>
  `(${session}.state <> 'live' OR ${session}.heartbeat_at < ${NOW}
    - coalesce(${session}.ttl_ms, ${SESSION_TTL_FALLBACK_MS}) * interval '1 millisecond')`;

/**
 * A claim or `next` asked for is proof of life (SQLite's renewIfSilent, sqlite/claims.ts): the
 * session of the CTE `s` (already locked FOR KEY SHARE), live but past its TTL and not yet
 * rescued, is renewed as a heartbeat renews it, when `also` holds; one within its TTL is not
 * written. Its statement judges everything else on what it read before this renewal, and takes
 * its task locks after it (`(SELECT count(*) FROM r) >= 0`), in the lock order: sessions first.
 */
export const RENEW_IF_SILENT = (also: string): string =>
  `UPDATE sessions SET heartbeat_at = ${NOW} FROM s
  WHERE sessions.id = s.id AND sessions.state = 'live' AND ${EXPIRED('sessions')} AND ${also}
  RETURNING sessions.id`;

/**
 * The grant of a task's claim, as an UPDATE of `tasks` sets it (SQL): the epoch moves on, the
 * session `session` holds it since `at`. Every statement that grants one splices it in (claims.ts'
 * grant and takeover, lifecycle.ts' next, runs.ts' begin).
 */
export const taskGrantSet = (session: string, at: string): string =>
  `epoch = tasks.epoch + 1, holder_session_id = ${session}, claimed_at = ${at}`;

/** A task's state facts from a TaskRow-like row, for taskStateRefusal. */
export const stateFacts = (row: TaskStateColumns<PgEncoding>): TaskStateFacts => stateFactsOf(PG, row);

/** The host of the session whose id is the given SQL expression, for audit rows. */
export const hostOf = (sessionExpr: string): string =>
  `(SELECT host FROM sessions WHERE id = ${sessionExpr})`;

/**
 * The detail of the `job:claimed` ledger row of the job in CTE row `job`: its attempt and host, and
 * `started: true` when the same statement started it (`started`, an SQL boolean). A claim that
 * starts its job is one transition, queued to running, and one ledger row (decision 0023).
 */
export const claimedDetail = (job: string, started: string): string =>
  `jsonb_build_object('attempt', ${job}.attempt, 'host', ${job}.host)
    || CASE WHEN ${started} THEN '{"started": true}'::jsonb ELSE '{}'::jsonb END`;

/**
 * JSON to add (`||`) to a ledger row's detail: `by`, who asked in words, when the text parameter
 * is given, else nothing (store/actor.ts, withActor).
 */
export const actorJson = (param: string): string =>
  `(CASE WHEN ${param}::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('by', ${param}::text) END)`;

/** A job's own time limit in a ledger row's detail, when it has one (`{}` else). */
export const limitJson = (column: string): string =>
  `(CASE WHEN ${column} IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('timeLimitMs', ${column}) END)`;

export const ms = (date: Date): Instant => date.getTime();
export const msOrNull = (date: Date | null): Instant | null => (date === null ? null : date.getTime());

/**
 * How pg returns the columns the engines store differently (store/rows.ts): timestamptz as a
 * Date, boolean as a boolean, and jsonb and text[] parsed.
 */
export interface PgEncoding extends Encoding {
  readonly time: Date;
  readonly flag: boolean;
  readonly json: unknown;
}

export const PG: RowDecoder<PgEncoding> = { instant: ms, flag: (value) => value, json: (value) => value };

export type TaskRow = rows.TaskRow<PgEncoding>;
export type SessionRow = rows.SessionRow<PgEncoding>;
export type ClaimRow = rows.ClaimRow<PgEncoding>;
export type JobRow = rows.JobRow<PgEncoding>;
export type LeaseRow = rows.LeaseRow<PgEncoding>;
export type AuditRow = rows.AuditRow<PgEncoding>;

export const toTask = (row: TaskRow): Task => taskOf(PG, row);
export const toSession = (row: SessionRow): Session => sessionOf(PG, row);
export const toClaim = (row: ClaimRow): Claim => claimOf(PG, row);
export const toJob = (row: JobRow): Job => jobOf(PG, row);
export const toLease = (row: LeaseRow): Lease => leaseOf(PG, row);
export const toAudit = (row: AuditRow): AuditEntry => auditOf(PG, row);

/**
 * A timestamptz as the Instant `ms` makes of it (milliseconds, floored), computed by the server: a
 * read of many rows (the fleet's thousand hosts) parses numbers instead of one Date per time.
 */
export const msOf = (expr: string): string => `floor(extract(epoch FROM ${expr}) * 1000)::bigint`;

/** The timestamptz for an Instant passed as a bigint parameter: exact, unlike to_timestamp(). */
export const atMs = (param: string): string =>
  `('epoch'::timestamptz + ${param}::bigint * interval '1 millisecond')`;

/** A bigint parameter of milliseconds as an interval. */
export const msInterval = (param: string): string => `(${param}::bigint * interval '1 millisecond')`;

export const TASK_COLUMNS = `id, key, title, priority, project, assignee, labels, created_at, epoch,
  holder_session_id, claimed_at, state, state_at, state_by, state_reason, gate, review_required, body, url,
  feedback, feedback_from`;

export const SESSION_COLUMNS =
  'id, kind, host, pid, name, started_at, heartbeat_at, ended_at, state, ttl_ms, end_reason, ended_by';

const JOB_FIELDS = [
  'id',
  'task_id',
  'status',
  'priority',
  'queued_at',
  'ram_mb',
  'command',
  'attempt',
  'attempt_max',
  'epoch',
  'session_id',
  'host',
  'claimed_at',
  'started_at',
  'finished_at',
  'exit_code',
  'reason',
  'run_after',
  'term',
  'agent_session_id',
  'pid',
  'output_tail',
  'time_limit_ms',
] as const;

/** The job table's own columns, qualified by `table`. */
export function jobFields(table: string): string {
  return JOB_FIELDS.map((field) => `${table}.${field}`).join(', ');
}

/** The job columns qualified by `table`, plus the task key. For SELECT and RETURNING. */
export function jobColumns(table: string): string {
  return `${jobFields(table)}, (SELECT key FROM tasks WHERE id = ${table}.task_id) AS key`;
}

export const LEASE_COLUMNS = 'name, holder, term, acquired_at, expires_at';

/**
 * What a losing or refused claim operation needs to explain itself, read fresh after the
 * guarded statement changed nothing: whether the task and session exist, and the live claim.
 */
export interface ClaimStateRow {
  task_id: number | null;
  session_state: string | null;
  session_id: number | null;
  epoch: number | null;
  claimed_at: Date | null;
  heartbeat_at: Date | null;
  holder_host: string | null;
  /** The task's state, since when, by whom and why (for a refusal). */
  state: string | null;
  state_at: Date | null;
  state_by: string | null;
  state_reason: string | null;
  /** Whether the live claim's session has passed its TTL (or is not live), on the database clock. */
  holder_expired: boolean | null;
}

export async function claimState(
  querier: Querier,
  key: string,
  session: number | null,
): Promise<ClaimStateRow> {
  const [row] = await querier.rows<ClaimStateRow>(
    `SELECT t.id AS task_id, s.state AS session_state, c.session_id, c.epoch, c.claimed_at,
       c.heartbeat_at, hs.host AS holder_host, t.state, t.state_at, t.state_by, t.state_reason,
       ${EXPIRED('hs')} AS holder_expired
     FROM (SELECT 1) one
     LEFT JOIN tasks t ON t.key = $1::text
     LEFT JOIN sessions s ON s.id = $2::bigint
     LEFT JOIN claims c ON c.task_id = t.id AND c.released_at IS NULL
     LEFT JOIN sessions hs ON hs.id = c.session_id`,
    [key, session],
  );
  assert(row !== undefined, 'claimState returns exactly one row');
  return row;
}

/** The holder of a task's live claim, as told to a loser. */
export function holderOf(row: ClaimStateRow): Holder | null {
  if (row.session_id === null || row.epoch === null || row.claimed_at === null) return null;
  const since = ms(row.claimed_at);
  return { session: row.session_id, host: row.holder_host ?? '', since, epoch: row.epoch };
}

/** The live claim in a ClaimStateRow as a domain Claim, or null. */
export function liveClaimOf(key: string, row: ClaimStateRow): Claim | null {
  if (row.session_id === null || row.epoch === null) return null;
  if (row.claimed_at === null || row.heartbeat_at === null) return null;
  return {
    key,
    session: row.session_id,
    epoch: row.epoch,
    claimedAt: ms(row.claimed_at),
    heartbeatAt: ms(row.heartbeat_at),
    releasedAt: null,
    outcome: null,
  };
}
