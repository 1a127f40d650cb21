/**
 * SQL fragments for workspace lock rows on PostgreSQL, spliced into the statements that end a
 * lock's run or its holder: a job's finish, cancel and requeue (keyed by the job), a session's
 * end and rescue (keyed by the session). The release rides in the same statement as the change
 * that ends the run, or in the same transaction as the claims of the session, so no path can
 * end a run and forget its lock.
 *
 * Ledger rows are written by one INSERT … SELECT … ORDER BY per statement, so their ids follow
 * the same order as on SQLite: the change itself first, then the locks by workspace.
 */
import { hostOf } from './rows.js';

export const LOCK_COLUMNS = 'workspace, job_id, session_id, epoch, acquired_at';

/** The task key of a job, for audit rows, given the job id as an SQL expression. */
export const keyOfJob = (jobExpr: string): string =>
  `(SELECT t.key FROM jobs jk JOIN tasks t ON t.id = jk.task_id WHERE jk.id = ${jobExpr})`;

/**
 * CTE `name` deleting the lock rows `where` matches (it may name the tables in `using`),
 * returning them.
 */
export const deleteLocks = (name: string, where: string, using = ''): string =>
  `${name} AS (
  DELETE FROM workspace_locks ${using === '' ? '' : `USING ${using}`}
  WHERE ${where}
  RETURNING workspace_locks.workspace, workspace_locks.job_id, workspace_locks.session_id,
    workspace_locks.epoch
)`;

/**
 * The columns every audit row of a combined insert carries, in order, after a sort key `part`
 * and a tie-breaker `seq` (text, compared byte by byte; numbers go in zero-padded, see seqOf).
 */
export const AUDIT_COLUMNS = 'at, type, task_key, job_id, session_id, host, epoch, detail';

/**
 * Rows for a combined audit insert: one `lock:released` per lock in CTE `locks`, at `at`, with
 * the outcome (an SQL expression); `from` adds the CTEs `at` reads.
 */
export const lockReleasedRows = (part: number, locks: string, at: string, outcome: string, from = ''): string =>
  `SELECT ${part} AS part, ${locks}.workspace::text AS seq, ${at} AS at, 'lock:released'::text AS type,
    ${keyOfJob(`${locks}.job_id`)} AS task_key, ${locks}.job_id::bigint AS job_id,
    ${locks}.session_id::bigint AS session_id, ${hostOf(`${locks}.session_id`)} AS host,
    ${locks}.epoch::bigint AS epoch,
    jsonb_build_object('workspace', ${locks}.workspace, 'outcome', ${outcome}) AS detail
  FROM ${locks}${from === '' ? '' : `, ${from}`}`;

/** A number as a `seq` that sorts numerically. */
export const seqOf = (numberExpr: string): string => `lpad(${numberExpr}::text, 20, '0')`;

/** The INSERT of a combined audit CTE over `rows` (a UNION ALL of part-tagged selects). */
export const insertAuditRows = (rows: string): string =>
  `INSERT INTO audit_events (${AUDIT_COLUMNS})
  SELECT ${AUDIT_COLUMNS} FROM (${rows}) x
  ORDER BY x.part, x.seq COLLATE "C"`;
