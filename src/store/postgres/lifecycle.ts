/**
 * The task lifecycle's actions on PostgreSQL (lifecycle-store.ts). A person's action is one
 * statement: the task's active job locked (`oj`), then the task (`o`, FOR UPDATE, reading the
 * state it leaves), then the move through task-state.ts with its ledger rows and the end of the
 * job. An escalation is one transaction that locks the job, the claim and the task in that order
 * and then decides on what it holds. `next` picks with FOR UPDATE SKIP LOCKED, so two callers at
 * once pass over each other's task instead of both taking it.
 */
import { assert } from '../../core/assert.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { planTaskTransition, type Task, type TaskGate, type TaskState } from '../../core/task.js';
import type { DependencyOps, LifecycleStore, TaskEscalateResult } from '../lifecycle-store.js';
import { taskStateRefusal } from '../task-refusal.js';
import { taskOpen } from './claim-set.js';
import { insertAuditRows, seqOf } from './locks.js';
import {
  EXPIRED,
  NOW,
  RENEW_IF_SILENT,
  TASK_COLUMNS,
  hostOf,
  stateFacts,
  taskGrantSet,
  toClaim,
  toTask,
  type ClaimRow,
  type TaskRow,
} from './rows.js';
import type { PgExecutor, Querier } from './executor.js';
import {
  endJob,
  endJobAuditRows,
  expiredDetail,
  lockActiveJob,
  moveAuditRows,
  moveReturning,
  moveSet,
  moveSql,
  type Move,
} from './task-state.js';
import { sessionNotFound, sessionNotLive } from './tasks-claims.js';

const move = (action: Move['action']): Move => ({
  action,
  at: `${NOW}`,
  by: '$2::text',
  session: '$3::bigint',
  reason: '$4::text',
});

/** Locks task $1 for a move in the same transaction (see moveSql); none when it does not exist. */
const LOCK_TASK = 'SELECT id, state, review_required FROM tasks WHERE key = $1::text FOR UPDATE';

/** Locks the active job of task $1, if any, ahead of its claim and the task (as escalate does). */
const LOCK_ACTIVE_JOB = `SELECT j.id FROM jobs j JOIN tasks t ON t.id = j.task_id
  WHERE t.key = $1::text AND j.status IN ('queued', 'claimed', 'running') FOR UPDATE OF j`;

/** Locks the live claim of task $1, if any, ahead of the task. */
const LOCK_LIVE_CLAIM = `SELECT c.id FROM claims c JOIN tasks t ON t.id = c.task_id
  WHERE t.key = $1::text AND c.released_at IS NULL FOR UPDATE OF c`;

/**
 * Only an open task takes claims: a move out of open (close, complete, approve; $2 the action, by
 * $3) ends task $1's live claim `released`, before the move in its transaction, with a
 * `claim:released` row naming the action and who took it, so the old holder is fenced.
 */
const END_LIVE_CLAIM = `WITH c AS (
  UPDATE claims SET released_at = ${NOW}, outcome = 'released'
  FROM tasks tk WHERE tk.key = $1::text AND claims.task_id = tk.id AND claims.released_at IS NULL
  RETURNING claims.task_id, claims.session_id, claims.epoch, claims.released_at, tk.key
), h AS (
  UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL FROM c WHERE tasks.id = c.task_id
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, c.released_at AS at, 'claim:released'::text AS type, c.key AS task_key,
      NULL::bigint AS job_id, c.session_id, ${hostOf('c.session_id')} AS host, c.epoch,
      jsonb_build_object('outcome', 'released', 'action', $2::text, 'by', $3::text) AS detail
    FROM c`)}
)
SELECT c.epoch FROM c`;

async function taskByKey(querier: Querier, key: string): Promise<TaskRow> {
  const [task] = await querier.rows<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE key = $1::text`, [key]);
  if (task === undefined) throw new NotFoundError('task', key, 'add it with `baton task add`');
  return task;
}

export function postgresLifecycle(exec: PgExecutor): Omit<LifecycleStore['lifecycle'], DependencyOps> {
  return {
    transition: (params) => transition(exec, params),
    escalate: (params) => exec.transaction((transaction) => escalate(transaction, params)),
    gate: async (params) => {
      const row = await exec.one<TaskRow & { old_state: string; old_gate: TaskGate | null }>(GATE, [
        params.key,
        params.gate,
        params.by.name,
        params.by.session ?? null,
      ]);
      if (row === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
      if (row.old_state !== 'open')
        throw taskStateRefusal(stateFacts(await taskByKey(exec, params.key)), 'gate');
      return row.id === null ? toTask(await taskByKey(exec, params.key)) : toTask(row);
    },
    approveGate: async (params) => {
      const row = await exec.one<TaskRow & { old_gate: TaskGate | null }>(APPROVE, [
        params.key,
        params.gate,
        params.by.name,
        params.by.session ?? null,
        params.note ?? null,
      ]);
      if (row === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
      if (row.id === null) {
        throw new ConflictError(
          `task ${params.key} does not wait for ${params.gate} approval`,
          `put it behind the gate with \`baton gate ${params.key} ${params.gate}\` first`,
        );
      }
      return toTask(row);
    },
    next: async (params) => {
      const row = await exec.one<
        Partial<TaskRow> & Partial<ClaimRow> & { session_state: string | null; claim_epoch: number }
      >(NEXT, [params.session, params.project ?? null, params.label ?? null]);
      assert(row !== undefined, 'next returns exactly one row');
      if (row.session_state === null) throw sessionNotFound(params.session);
      if (row.session_state !== 'live') throw sessionNotLive(params.session, row.session_state);
      if (row.id === undefined || row.id === null) return null;
      const task = toTask(row as TaskRow);
      return { task, claim: toClaim({ ...(row as ClaimRow), key: task.key, epoch: row.claim_epoch }) };
    },
    escalations: async (params = {}) =>
      (
        await exec.rows<TaskRow>(
          `SELECT ${TASK_COLUMNS} FROM tasks WHERE state = 'escalated' ORDER BY state_at, id LIMIT $1::int`,
          [params.limit ?? 1000],
        )
      ).map(toTask),
  };
}

/**
 * A person's move of the task in one transaction: its active job, live claim and row locked in
 * that order and, for a move out of open, the claim ended first (END_LIVE_CLAIM), then the move (moveSql).
 */
async function transition(
  exec: PgExecutor,
  params: Parameters<LifecycleStore['lifecycle']['transition']>[0],
): Promise<Task> {
  const row = await exec.transaction(async (querier) => {
    // Lock order as escalate's and force-release's: the active job, the live claim, the task.
    await querier.rows(LOCK_ACTIVE_JOB, [params.key]);
    await querier.rows(LOCK_LIVE_CLAIM, [params.key]);
    const [locked] = await querier.rows<{ state: TaskState; review_required: boolean }>(LOCK_TASK, [
      params.key,
    ]);
    const plan =
      locked === undefined
        ? undefined
        : planTaskTransition({ state: locked.state, reviewRequired: locked.review_required }, params.action);
    if (plan?.ok === true && plan.to !== 'open') {
      await querier.rows(END_LIVE_CLAIM, [params.key, params.action, params.by.name]);
    }
    const values = [params.key, params.by.name, params.by.session ?? null, params.reason ?? null];
    return (await querier.rows<TaskRow>(moveSql(move(params.action), ''), values))[0];
  });
  if (row !== undefined) return toTask(row);
  throw taskStateRefusal(stateFacts(await taskByKey(exec, params.key)), params.action);
}

/**
 * Puts task $1 behind gate $2 (by $3, session $4) when it is open; one row: the old state and
 * gate, and the task when it changed.
 */
const GATE = `WITH o AS (
  SELECT id, state, gate FROM tasks WHERE key = $1::text FOR UPDATE
), t AS (
  UPDATE tasks SET gate = $2::text FROM o
  WHERE tasks.id = o.id AND o.state = 'open' AND o.gate IS DISTINCT FROM $2::text
  RETURNING ${TASK_COLUMNS.split(',')
    .map((column) => `tasks.${column.trim()}`)
    .join(', ')}
), a AS (
  INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
  SELECT ${NOW}, 'task:gated', key, $4::bigint, ${hostOf('$4::bigint')},
    jsonb_build_object('gate', $2::text, 'by', $3::text)
  FROM t
)
SELECT o.state AS old_state, o.gate AS old_gate, t.* FROM o LEFT JOIN t ON true`;

/** Opens gate $2 of task $1 (by $3, session $4, note $5); one row: the task if it waited behind it. */
const APPROVE = `WITH o AS (
  SELECT id, gate FROM tasks WHERE key = $1::text FOR UPDATE
), t AS (
  UPDATE tasks SET gate = NULL FROM o WHERE tasks.id = o.id AND o.gate = $2::text
  RETURNING ${TASK_COLUMNS.split(',')
    .map((column) => `tasks.${column.trim()}`)
    .join(', ')}
), a AS (
  INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
  SELECT ${NOW}, 'task:approved', key, $4::bigint, ${hostOf('$4::bigint')},
    jsonb_build_object('gate', $2::text, 'by', $3::text, 'note', $5::text)
  FROM t
)
SELECT o.gate AS old_gate, t.* FROM o LEFT JOIN t ON true`;

/**
 * `next` for session $1 (project $2, label $3). `cand` locks the best eligible task FOR UPDATE
 * SKIP LOCKED: a concurrent `next` skips it and takes the one after. A holder past its TTL has
 * its claim released `expired` (`o`) before the grant (`t` reads `o`), judged as TAKE_OVER
 * (claims.ts) judges it: its session row is locked FOR SHARE as the task is filtered, before the
 * task's lock (sessions first), and its expiry is re-checked on the row's newest version, so a
 * renewal committed after this statement's snapshot keeps the task. SKIP LOCKED passes over a
 * holder whose renewal (a heartbeat, or its own claim's or `next`'s `r`) or rescue is in flight:
 * `next` never waits for one, and takes the next eligible task instead (docs/decisions/0058).
 * `r` renews a silent live session first (RENEW_IF_SILENT: asking for work is proof of life,
 * found or not), which `cand` reads from its snapshot as still silent: the session's own held
 * tasks are left out by name, as SQLite's renewal first leaves them. Always one row: the
 * session's state, and the task and claim granted, if any.
 */
export const NEXT = `WITH s AS (
  SELECT id, host, state FROM sessions WHERE id = $1::bigint FOR KEY SHARE
), r AS (
  ${RENEW_IF_SILENT('true')}
), cand AS (
  SELECT t.id FROM tasks t
  WHERE ${taskOpen('t')} AND EXISTS (SELECT 1 FROM s WHERE s.state = 'live') AND (SELECT count(*) FROM r) >= 0
    AND (t.holder_session_id IS NULL OR (t.holder_session_id <> $1::bigint AND EXISTS (
      SELECT 1 FROM sessions h WHERE h.id = t.holder_session_id AND ${EXPIRED('h')} FOR SHARE SKIP LOCKED)))
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = t.id AND j.status IN ('queued', 'claimed', 'running'))
    AND ($2::text IS NULL OR t.project = $2::text)
    AND ($3::text IS NULL OR t.labels ? $3::text)
  ORDER BY t.priority, t.created_at, t.id
  LIMIT 1
  FOR UPDATE OF t SKIP LOCKED
), o AS (
  UPDATE claims SET released_at = ${NOW}, outcome = 'expired'
  FROM cand, sessions h
  WHERE claims.task_id = cand.id AND claims.released_at IS NULL AND h.id = claims.session_id
  RETURNING claims.task_id, claims.session_id, claims.epoch, claims.released_at, h.heartbeat_at, h.ttl_ms
), t AS (
  UPDATE tasks SET ${taskGrantSet('s.id', NOW)}
  FROM cand, s
  WHERE tasks.id = cand.id AND s.state = 'live' AND (SELECT count(*) FROM o) >= 0
  RETURNING ${TASK_COLUMNS.split(',')
    .map((column) => `tasks.${column.trim()}`)
    .join(', ')}, s.host AS session_host
), c AS (
  INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
  SELECT id, holder_session_id, epoch, claimed_at, claimed_at FROM t
  RETURNING session_id, epoch AS claim_epoch, heartbeat_at, released_at, outcome
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ${seqOf('o.epoch')} AS seq, o.released_at AS at, 'claim:released'::text AS type,
      t.key AS task_key, NULL::bigint AS job_id, o.session_id, ${hostOf('o.session_id')} AS host, o.epoch,
      ${expiredDetail('o', '$1::bigint')} AS detail
    FROM o JOIN t ON t.id = o.task_id
    UNION ALL
    SELECT 1, '', t.claimed_at, 'claim:granted', t.key, NULL, t.holder_session_id, t.session_host, t.epoch,
      jsonb_build_object('via', 'next')
    FROM t`)}
)
SELECT s.state AS session_state, t.*, c.*
FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN t ON true LEFT JOIN c ON true`;

/**
 * One transaction: the task's active job, its live claim and the task are locked in that order,
 * then the claim is checked against the caller's (fenced otherwise), the state against the
 * action, and one statement ends the claim and the job and moves the task, with the ledger rows.
 */
async function escalate(
  querier: Querier,
  params: Parameters<LifecycleStore['lifecycle']['escalate']>[0],
): Promise<TaskEscalateResult> {
  const task = await taskByKey(querier, params.key);
  const [job] = await querier.rows<{ id: number }>(
    `SELECT id FROM jobs WHERE task_id = $1::bigint AND status IN ('queued', 'claimed', 'running') FOR UPDATE`,
    [task.id],
  );
  const [live] = await querier.rows<{ session_id: number; epoch: number; claimed_at: Date; host: string }>(
    `SELECT c.session_id, c.epoch, c.claimed_at, s.host FROM claims c JOIN sessions s ON s.id = c.session_id
     WHERE c.task_id = $1::bigint AND c.released_at IS NULL FOR UPDATE OF c`,
    [task.id],
  );
  const [locked] = await querier.rows<TaskRow>(
    `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1::bigint FOR UPDATE`,
    [task.id],
  );
  assert(locked !== undefined, 'a task is never deleted');
  if (
    params.claim !== undefined &&
    (live?.session_id !== params.claim.session || live.epoch !== params.claim.epoch)
  ) {
    const current =
      live === undefined
        ? null
        : { session: live.session_id, host: live.host, since: live.claimed_at.getTime(), epoch: live.epoch };
    const [session] = await querier.rows<{ state: string }>(
      'SELECT state FROM sessions WHERE id = $1::bigint',
      [params.claim.session],
    );
    // An ended (or rescued) session is told so, as its release is.
    if (session !== undefined && session.state !== 'live') {
      return { ok: false, reason: 'fenced', current, sessionEnded: true };
    }
    return { ok: false, reason: 'fenced', current };
  }
  if (locked.state !== 'open' && locked.state !== 'in_review') {
    throw taskStateRefusal(stateFacts(locked), 'escalate');
  }
  const [row] = await querier.rows<TaskRow>(ESCALATE, [
    params.key,
    params.by.name,
    params.by.session ?? null,
    params.reason,
  ]);
  assert(row !== undefined, 'a locked task in a state escalate leaves moves');
  return { ok: true, task: toTask(row), claimEpoch: live?.epoch ?? null, jobId: job?.id ?? null };
}

const ESCALATE_MOVE = move('escalate');

/** Every task column qualified by `tasks.`, for RETURNING beside the move's own columns. */
const TASK_REST = TASK_COLUMNS.split(',')
  .map((column) => column.trim())
  .filter((column) => !['id', 'key', 'state_at', 'state_by', 'state_reason'].includes(column))
  .map((column) => `tasks.${column}`)
  .join(', ');

/** The escalation itself, on rows the transaction has locked: $1 key, $2 by, $3 session, $4 reason. */
const ESCALATE = `WITH c AS (
  UPDATE claims SET released_at = ${NOW}, outcome = 'escalated'
  FROM tasks tk WHERE tk.key = $1::text AND claims.task_id = tk.id AND claims.released_at IS NULL
  RETURNING claims.task_id, claims.session_id, claims.epoch, claims.released_at, tk.key
), ${lockActiveJob('(SELECT id FROM tasks WHERE key = $1::text)')}, o AS (
  SELECT * FROM tasks WHERE key = $1::text AND (SELECT count(*) FROM c) >= 0 FOR UPDATE
), t AS (
  UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL, ${moveSet(ESCALATE_MOVE, 'o')}
  FROM o WHERE tasks.id = o.id
  RETURNING ${moveReturning(ESCALATE_MOVE, 'o')}, ${TASK_REST}
), ${endJob('t')}, a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, c.released_at AS at, 'claim:released'::text AS type, c.key AS task_key,
      NULL::bigint AS job_id, c.session_id, ${hostOf('c.session_id')} AS host, c.epoch,
      jsonb_build_object('outcome', 'escalated') AS detail
    FROM c
    UNION ALL
    ${moveAuditRows(1, 't', 'escalate')}
    UNION ALL
    ${endJobAuditRows(2)}`)}
)
SELECT * FROM t`;
