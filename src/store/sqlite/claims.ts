/**
 * Claims on SQLite. Each method is one BEGIN IMMEDIATE transaction, so reading the task and its
 * live claim and granting it are one step. A live claim whose session passed its own TTL on the
 * database clock is taken over by the next grant in that same step (no leader needed): released
 * `expired`, the epoch bumped, so the old holder's later writes are fenced.
 */
import type { ClaimResult, FencedResult } from '../../core/claim.js';
import { NotFoundError } from '../../core/errors.js';
import { hasExpired } from '../../core/session.js';
import type { Store } from '../store.js';
import { taskStateRefusal } from '../task-refusal.js';
import { appendAudit, EXPIRED, holderOf, toClaim, type ClaimRow, type TaskRow } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { facts, changeTaskState } from './task-state.js';
import { forceRelease } from './force-release.js';
import { sessionRow, taskRow } from './tasks-claims.js';

const CLAIM_COLUMNS = `t.key, c.session_id, c.epoch, c.claimed_at, c.heartbeat_at,
  c.released_at, c.outcome`;

function currentClaim(exec: SqliteExecutor, taskId: number): ClaimRow | undefined {
  return exec
    .prepare(
      `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
       WHERE c.task_id = ? AND c.released_at IS NULL`,
    )
    .get(taskId) as ClaimRow | undefined;
}

/**
 * Releases the task's live claim as `expired` when its session has passed its TTL (or is no
 * longer live); true when the task is free afterwards.
 */
export function expireStaleHolder(exec: SqliteExecutor, now: number, task: TaskRow, by: number): boolean {
  const live = exec
    .prepare(
      `SELECT c.id, c.session_id, c.epoch, s.heartbeat_at, s.ttl_ms, s.state FROM claims c
       JOIN sessions s ON s.id = c.session_id WHERE c.task_id = ? AND c.released_at IS NULL`,
    )
    .get(task.id) as
    | {
        id: number;
        session_id: number;
        epoch: number;
        heartbeat_at: number;
        ttl_ms: number | null;
        state: string;
      }
    | undefined;
  if (live === undefined) return true;
  if (live.state === 'live' && !hasExpired(live.heartbeat_at, live.ttl_ms, now)) return false;
  endClaim(exec, now, task, live, {
    outcome: 'expired',
    heartbeatAt: live.heartbeat_at,
    ttlMs: live.ttl_ms,
    takenBy: by,
  });
  return true;
}

/** A live claim as the statements that end it read it. */
export interface LiveClaim {
  readonly id: number;
  readonly session_id: number;
  readonly epoch: number;
}

/**
 * Ends `task`'s live claim with `detail.outcome`, now: the claim released, the task's holder
 * cleared, and a `claim:released` row with `detail` under the claim's session and epoch.
 */
export function endClaim(
  exec: SqliteExecutor,
  now: number,
  task: Pick<TaskRow, 'id' | 'key'>,
  live: LiveClaim,
  detail: { readonly outcome: 'expired' | 'released' | 'escalated' } & Record<string, unknown>,
): void {
  // The outcome as a literal, one statement text per outcome (a closed set, never input).
  exec
    .prepare(`UPDATE claims SET released_at = ?, outcome = '${detail.outcome}' WHERE id = ?`)
    .run(now, live.id);
  exec.prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ?').run(task.id);
  const { key } = task;
  appendAudit(exec, {
    at: now,
    type: 'claim:released',
    key,
    session: live.session_id,
    epoch: live.epoch,
    detail,
  });
}

/**
 * A claim or `next` asked for is proof of life: a live session past its TTL but not yet rescued is
 * renewed, as a heartbeat would renew it, so a claim it is granted (or told it already holds) is
 * not lost at once to the next claimant's takeover. A session within its TTL is not written: only
 * past it does any decision (takeover, rescue, host liveness) read the difference. PostgreSQL:
 * RENEW_IF_SILENT.
 */
export function renewIfSilent(exec: SqliteExecutor, now: number, session: number): void {
  exec
    .prepare(
      `UPDATE sessions SET heartbeat_at = @now
       WHERE id = @session AND sessions.state = 'live' AND ${EXPIRED('sessions')}`,
    )
    .run({ now, session });
}

/** Grants a free task (as read in this transaction) to the session, bumping its epoch. */
export function grantClaim(
  exec: SqliteExecutor,
  now: number,
  task: TaskRow,
  session: number,
  detail: Record<string, unknown> = {},
): ClaimRow {
  const epoch = task.epoch + 1;
  exec
    .prepare(
      `UPDATE tasks SET epoch = ?, holder_session_id = ?, claimed_at = ?
       WHERE id = ? AND holder_session_id IS NULL`,
    )
    .run(epoch, session, now, task.id);
  exec
    .prepare(
      `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
       VALUES (?, ?, ?, ?, ?)`,
    )
    .run(task.id, session, epoch, now, now);
  appendAudit(exec, { at: now, type: 'claim:granted', key: task.key, session, epoch, detail });
  return currentClaim(exec, task.id) as ClaimRow;
}

export function sqliteClaims(exec: SqliteExecutor): Sync<Store['claims']> {
  return {
    acquire: (params) =>
      exec.write((): ClaimResult => {
        const task = taskRow(exec, params.key);
        if (task === undefined) {
          throw new NotFoundError('task', params.key, 'add it with `baton task add`');
        }
        sessionRow(exec, params.session, true);
        if (task.state !== 'open') throw taskStateRefusal(facts(task), 'claim');
        const now = exec.now();
        renewIfSilent(exec, now, params.session);
        if (task.holder_session_id === params.session) {
          const mine = currentClaim(exec, task.id);
          if (mine !== undefined) return { ok: true, claim: toClaim(mine), granted: false };
        }
        if (!expireStaleHolder(exec, now, task, params.session)) {
          const holder = holderOf(exec, task.id);
          if (holder !== null) return { ok: false, reason: 'held', holder };
        }
        const fresh = taskRow(exec, params.key) as TaskRow;
        return { ok: true, claim: toClaim(grantClaim(exec, now, fresh, params.session)), granted: true };
      }),
    release: (params) => exec.write(() => release(exec, params)),
    forceRelease: (params) => exec.write(() => forceRelease(exec, params)),
    current: (key) =>
      exec.read(() => {
        const task = taskRow(exec, key);
        if (task === undefined) throw new NotFoundError('task', key);
        const row = currentClaim(exec, task.id);
        return row === undefined ? null : toClaim(row);
      }),
    history: (key) =>
      exec.read(() =>
        (
          exec
            .prepare(
              `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
                 WHERE t.key = ? ORDER BY c.epoch`,
            )
            .all(key) as ClaimRow[]
        ).map(toClaim),
      ),
  };
}

/** The body of release: guarded by (session, epoch); outcome done finishes an open task. */
function release(exec: SqliteExecutor, params: Parameters<Store['claims']['release']>[0]): FencedResult {
  const task = taskRow(exec, params.key);
  if (task === undefined) throw new NotFoundError('task', params.key);
  const session = sessionRow(exec, params.session, false);
  const now = exec.now();
  const changed = exec
    .prepare(
      `UPDATE claims SET released_at = ?, outcome = ?
       WHERE task_id = ? AND session_id = ? AND epoch = ? AND released_at IS NULL`,
    )
    .run(now, params.outcome, task.id, params.session, params.epoch).changes;
  if (changed === 0) {
    const current = holderOf(exec, task.id);
    // An ended (or rescued) session is told so, as its heartbeat is: its claims ended with it.
    return session.state === 'live'
      ? { ok: false, reason: 'fenced', current }
      : { ok: false, reason: 'fenced', current, sessionEnded: true };
  }
  exec.prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ?').run(task.id);
  appendAudit(exec, {
    at: now,
    type: 'claim:released',
    key: params.key,
    session: params.session,
    epoch: params.epoch,
    detail: { outcome: params.outcome },
  });
  if (params.outcome === 'done' && task.state === 'open') {
    const by = { name: `session ${params.session}`, session: params.session };
    changeTaskState(exec, now, task, { action: 'finish', by });
  }
  return { ok: true };
}
