/**
 * Hand-off at enqueue on SQLite (docs/decisions/0024; store/hand-off.ts holds what both engines
 * share): the enqueue's hand-off, the claim statement that takes or takes back a session's
 * hand-off, and the read that takes it without a write.
 */
import type { Job, JobId } from '../../core/job.js';
import type { JobClaimNextParams } from '../store.js';
import { HAND_OFF_NOT_TAKEN, HandOffs } from '../hand-off.js';
import { appendAudit, toJob, type JobRow, type SessionRow } from './rows.js';
import { RETURNING, claimOneDue } from './job-steps.js';
import type { SqliteExecutor } from './executor.js';
import { sessionRow } from './tasks-claims.js';
import { taskOpen } from './claim-set.js';

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';

/** claimNext's hand-offs (store/hand-off.ts). */
export function sqliteHandOffs(exec: SqliteExecutor): HandOffs {
  return new HandOffs({
    // A take lost with the machine's power leaves the job handed again: see store/hand-off.ts.
    take: (session, known) =>
      Promise.resolve().then(() => exec.writeNotDurable(() => takeIn(exec, session, known))),
    claim: (params, known) => Promise.resolve().then(() => exec.write(() => claimIn(exec, params, known))),
  });
}

interface WaiterRow {
  id: number;
  host: string;
  wait_start: number;
}

/**
 * The live session waiting for a job whose wait ends first, which an enqueue hands its new job to
 * (docs/decisions/0024); undefined when none waits. As PostgreSQL's ENQUEUE.
 */
export function waiterFor(exec: SqliteExecutor, now: number): WaiterRow | undefined {
  return exec
    .prepare(
      `SELECT id, coalesce(wait_host, host) AS host, wait_start FROM sessions
       WHERE wait_until > ? AND state = 'live' AND handed_job IS NULL
       ORDER BY wait_until, id LIMIT 1`,
    )
    .get(now) as WaiterRow | undefined;
}

/**
 * The columns status, epoch, attempt, session_id, host, claimed_at and started_at of a new job:
 * queued, or claimed for `waiter` as claimNext would have claimed it (started if it asked).
 */
export function handedColumns(waiter: WaiterRow | undefined, now: number): unknown[] {
  if (waiter === undefined) return ['queued', 0, 0, null, null, null, null];
  const started = waiter.wait_start === 1;
  return [started ? 'running' : 'claimed', 1, 1, waiter.id, waiter.host, now, started ? now : null];
}

/** The rest of a hand-off, after the job's insert: its `job:claimed` row and the session's `handed_job`. */
export function handedTo(exec: SqliteExecutor, waiter: WaiterRow, row: JobRow, now: number): void {
  const started = row.status === 'running';
  appendAudit(exec, {
    at: now,
    type: 'job:claimed',
    key: row.key,
    jobId: row.id,
    session: waiter.id,
    epoch: row.epoch,
    detail: { attempt: row.attempt, host: row.host, ...(started ? { started: true } : {}), handedOff: true },
  });
  exec.prepare('UPDATE sessions SET handed_job = ?, wait_until = NULL WHERE id = ?').run(row.id, waiter.id);
}

interface HandOffColumns {
  handed_job: number | null;
  wait_until: number | null;
  wait_host: string | null;
  wait_start: number;
}

/**
 * The claim statement of claimNext (store/hand-off.ts runs it), inside the caller's write
 * transaction: the session's hand-off, else the best due job; then the session's wait mark. As
 * PostgreSQL's CLAIM_NEXT (`known` as its $5); no hand-off can land while it runs, so none is
 * ever pending.
 */
function claimIn(
  exec: SqliteExecutor,
  params: JobClaimNextParams,
  known: JobId | null,
): { job: Job | null; pending: boolean } {
  const session = sessionRow(exec, params.session, true);
  const marks = session as unknown as HandOffColumns; // sessionRow reads every column
  const now = exec.now();
  const handed = marks.handed_job !== null && marks.handed_job > (known ?? 0) ? marks.handed_job : null;
  let row = handed === null ? undefined : takeHandedIn(exec, params, session, handed, known !== null, now);
  row ??= claimOneDue(exec, session, params, now);
  const waitMs = row === undefined ? params.waitMs : undefined;
  const start = params.start === true ? 1 : 0;
  const stale =
    waitMs === undefined
      ? marks.wait_until !== null
      : marks.wait_until === null ||
        marks.wait_until < now + waitMs / 2 ||
        marks.wait_host !== (params.host ?? null) ||
        marks.wait_start !== start;
  if (marks.handed_job !== null || stale) {
    exec
      .prepare(
        'UPDATE sessions SET handed_job = NULL, wait_until = ?, wait_host = ?, wait_start = ? WHERE id = ?',
      )
      .run(waitMs === undefined ? null : now + waitMs, params.host ?? null, start, params.session);
  }
  return { job: row === undefined ? null : toJob(row), pending: false };
}

/**
 * The session's hand-off `id`, if it still holds it: as handed when this store waited for it
 * (`waited`), else given back and claimed again under a new epoch, with both ledger rows.
 */
function takeHandedIn(
  exec: SqliteExecutor,
  params: JobClaimNextParams,
  session: SessionRow,
  id: number,
  waited: boolean,
  now: number,
): JobRow | undefined {
  if (waited) {
    return exec
      .prepare(`${JOB_SELECT} WHERE j.id = ? AND j.session_id = ? AND j.status IN ('claimed', 'running')`)
      .get(id, params.session) as JobRow | undefined;
  }
  const open = exec
    .prepare(
      `SELECT ${taskOpen('t')} AS open FROM jobs j JOIN tasks t ON t.id = j.task_id
       WHERE j.id = ? AND j.session_id = ? AND j.status IN ('claimed', 'running')`,
    )
    .get(id, params.session) as { open: number } | undefined;
  if (open === undefined) return undefined;
  if (open.open !== 1) return giveBackIn(exec, params.session, id, now);
  const start = params.start === true;
  const row = exec
    .prepare(
      `UPDATE jobs SET status = @status, epoch = epoch + 1, host = @host, claimed_at = @now,
         started_at = @startedAt, reason = NULL, term = NULL, lease_until = NULL,
         agent_session_id = NULL, pid = NULL
       WHERE id = @id AND session_id = @session AND status IN ('claimed', 'running') ${RETURNING}`,
    )
    .get({
      status: start ? 'running' : 'claimed',
      host: params.host ?? session.host,
      now,
      startedAt: start ? now : null,
      id,
      session: params.session,
    }) as JobRow | undefined;
  if (row === undefined) return undefined;
  const base = { at: now, key: row.key, jobId: row.id, session: params.session };
  // Given back and claimed again in one step: both rows, as PostgreSQL's CLAIM_AUDIT_ROWS.
  const requeued = { reason: HAND_OFF_NOT_TAKEN, attempt: row.attempt - 1 };
  appendAudit(exec, { ...base, type: 'job:requeued', epoch: row.epoch - 1, detail: requeued });
  const claimed = {
    attempt: row.attempt,
    host: row.host,
    ...(start ? { started: true } : {}),
    recovered: true,
  };
  appendAudit(exec, { ...base, type: 'job:claimed', epoch: row.epoch, detail: claimed });
  return row;
}

/**
 * A hand-off taken back whose task takes no jobs now (a gate came): only given back, to wait in the
 * queue, with its `job:requeued` row; nothing is claimed. As PostgreSQL's CLAIM_STEPS `back`.
 */
function giveBackIn(exec: SqliteExecutor, session: number, id: number, now: number): undefined {
  const row = exec
    .prepare(
      `UPDATE jobs SET status = 'queued', run_after = ?, attempt = attempt - 1, session_id = NULL, host = NULL,
         claimed_at = NULL, started_at = NULL, agent_session_id = NULL, pid = NULL, term = NULL,
         lease_until = NULL, reason = ?
       WHERE id = ? ${RETURNING}`,
    )
    .get(now, `requeued: ${HAND_OFF_NOT_TAKEN}`, id) as JobRow;
  appendAudit(exec, {
    at: now,
    type: 'job:requeued',
    key: row.key,
    jobId: row.id,
    session,
    epoch: row.epoch,
    detail: { reason: HAND_OFF_NOT_TAKEN, attempt: row.attempt },
  });
  return undefined;
}

/** The job handed to the live session, newer than `known`, taken: `handed_job` cleared (store/hand-off.ts). */
function takeIn(exec: SqliteExecutor, session: number, known: number): Job | null {
  const row = exec
    .prepare(
      `${JOB_SELECT} JOIN sessions s ON s.handed_job = j.id
       WHERE s.id = ? AND s.state = 'live' AND s.handed_job > ? AND j.session_id = s.id
         AND j.status IN ('claimed', 'running')`,
    )
    .get(session, known) as JobRow | undefined;
  if (row === undefined) return null;
  exec.prepare('UPDATE sessions SET handed_job = NULL WHERE id = ?').run(session);
  return toJob(row);
}
