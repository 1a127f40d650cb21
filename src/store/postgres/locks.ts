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
const AUDIT_COLUMNS = 'at, type, task_key, job_id, session_id, host, epoch, detail';

/**
 * Rows for a combined audit insert: one `lock:released` per lock in CTE `locks`, at `at`, with
 * the outcome (an SQL expression); `from` adds the CTEs `at` reads.
 */
export const lockReleasedRows = (
  part: number,
  locks: string,
  at: string,
  outcome: string,
  from = '',
): string =>
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

/**
 * One statement that releases a session's live claims and workspace locks as `outcome` and
 * audits each, claims first, then `trailing` audit rows (part 2, over CTE `n` with the session's
 * ended_at as `n.at`), in one ordered insert so ids follow that order. $1 is the session. It
 * must run after the session row was marked (and locked) in the same transaction, in a statement
 * of its own, so its snapshot sees every claim committed before that lock. Returns the counts
 * `claims` and `locks`.
 */
export function releaseSessionHoldings(outcome: 'abandoned' | 'recovered', trailing = ''): string {
  return `WITH c AS (
      UPDATE claims SET released_at = s.ended_at, outcome = '${outcome}'
      FROM sessions s
      WHERE s.id = $1::bigint AND claims.session_id = s.id AND claims.released_at IS NULL
      RETURNING claims.id, claims.task_id, claims.epoch, claims.released_at
    ), t AS (
      UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL
      FROM c WHERE tasks.id = c.task_id AND tasks.epoch = c.epoch
      RETURNING tasks.id
    ), ${deleteLocks('k', 'workspace_locks.session_id = $1::bigint')}, n AS (
      SELECT ended_at AS at FROM sessions WHERE id = $1::bigint
    ), a AS (
      ${insertAuditRows(`
        SELECT 0 AS part, ${seqOf('c.id')} AS seq, c.released_at AS at, 'claim:released'::text AS type,
          tk.key AS task_key, NULL::bigint AS job_id, $1::bigint AS session_id,
          ${hostOf('$1::bigint')} AS host, c.epoch, '{"outcome":"${outcome}"}'::jsonb AS detail
        FROM c JOIN tasks tk ON tk.id = c.task_id
        UNION ALL
        ${lockReleasedRows(1, 'k', 'n.at', `'${outcome}'`, 'n')}
        ${trailing}`)}
    )
    SELECT (SELECT count(*) FROM c) AS claims, (SELECT count(*) FROM k) AS locks`;
}
