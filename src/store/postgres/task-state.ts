/**
 * The one place PostgreSQL changes a task's state (core/task.ts), as SQL fragments every
 * statement that moves a task splices in: the SET list of the guarded UPDATE, the columns it
 * returns, its `task:state` ledger rows (who made it), and the end of the task's active job when
 * it leaves `open` for good (cancelled, or escalated with the task) with that job's workspace
 * lock. A later outbox row would be one more fragment here, written by the same statements.
 *
 * Lock order, as everywhere (tasks-claims.ts): a session row before claims, a claim row before
 * the task's active job, the job before its task. A statement that may move a task from several
 * states locks its row first (CTE `o`, FOR UPDATE) to read the state it leaves; `finish`, which
 * leaves only `open`, guards the UPDATE itself and needs no lock CTE.
 */
import { assert } from '../../core/assert.js';
import { TASK_ACTION_FROM, type TaskAction, type TaskState } from '../../core/task.js';
import { insertAuditRows, lockReleasedRows, seqOf } from './locks.js';
import { hostOf } from './rows.js';

export interface Move {
  readonly action: TaskAction;
  /** SQL expressions: the time, who (text), their session (bigint or NULL) and why (text or NULL). */
  readonly at: string;
  readonly by: string;
  readonly session: string;
  readonly reason: string;
  /** An extra SQL condition for moving at all (such as the release's outcome being done). */
  readonly when?: string | undefined;
}

const list = (xs: readonly string[]): string => `(${xs.map((value) => `'${value}'`).join(', ')})`;

/** Where a finish leads its task (`target` of 'finish'): to review when it requires one, else done. */
const FINISH_TO = { plain: 'done', reviewed: 'in_review' } as const satisfies Record<string, TaskState>;

/** Where the action leads, reading the review flag of `row` (the old row). */
function target(action: TaskAction, row: string): string {
  switch (action) {
    case 'finish':
      return `CASE WHEN ${row}.review_required THEN '${FINISH_TO.reviewed}' ELSE '${FINISH_TO.plain}' END`;
    case 'approve':
    case 'complete':
      return `'done'`;
    case 'reject':
    case 'reopen':
    case 'resolve':
      return `'open'`;
    case 'close':
      return `'closed'`;
    case 'escalate':
      return `'escalated'`;
  }
}

/** Whether `row` (the old task row) moves: the action may leave its state, and `when` holds. */
function moves(move: Move, row: string): string {
  const when = move.when === undefined ? '' : ` AND ${move.when}`;
  return `(${row}.state IN ${list(TASK_ACTION_FROM[move.action])}${when})`;
}

/**
 * SET assignments for an `UPDATE tasks` that move the row by `m` when it may, and keep it
 * otherwise. `row` names the old row: `tasks` itself in a plain UPDATE, or the lock CTE `o`.
 */
export function moveSet(move: Move, row: string): string {
  const ok = moves(move, row);
  const to = target(move.action, row);
  const set = (column: string, value: string): string =>
    `${column} = CASE WHEN ${ok} THEN ${value} ELSE ${row}.${column} END`;
  return [
    set('state', to),
    set('state_at', move.at),
    set('state_by', move.by),
    set('state_reason', move.reason),
    ...feedbackSet(move, row, to).map(([column, value]) => set(column, value)),
  ].join(',\n    ');
}

/**
 * The feedback a move leaves for the next run, as SQLite's moveTask: a rejection's reason (from
 * review), a resolve's note (from escalation; a resolve without one keeps what was there), none
 * once done. feedback_from is read only beside a feedback, so other moves leave it alone.
 */
function feedbackSet(move: Move, row: string, to: string): (readonly [string, string])[] {
  if (move.action === 'reject')
    return [
      ['feedback', move.reason],
      ['feedback_from', `'review'`],
    ];
  if (move.action === 'resolve') {
    return [
      ['feedback', `coalesce(${move.reason}, ${row}.feedback)`],
      ['feedback_from', `CASE WHEN ${move.reason} IS NULL THEN ${row}.feedback_from ELSE 'escalation' END`],
    ];
  }
  return [['feedback', `CASE WHEN ${to} = 'done' THEN NULL ELSE ${row}.feedback END`]];
}

/**
 * RETURNING columns of that UPDATE for moveAuditRows and endJob: id, key, moved, from_state,
 * to_state, state_at, state_by, state_reason, by_session. In a plain UPDATE (`row` = tasks) the
 * action must leave from one state only, since RETURNING sees the new row.
 */
export function moveReturning(move: Move, row: string): string {
  const from = TASK_ACTION_FROM[move.action];
  assert(row !== 'tasks' || from.length === 1, 'a plain UPDATE knows the state it left');
  const fromState = row === 'tasks' ? `'${from[0] ?? ''}'::text` : `${row}.state`;
  const moved = row === 'tasks' ? 'true' : moves(move, row);
  return `tasks.id, tasks.key, ${moved} AS moved, ${fromState} AS from_state, tasks.state AS to_state,
    tasks.state_at, tasks.state_by, tasks.state_reason, ${move.session}::bigint AS by_session`;
}

/** The `task:state` ledger rows of the moved tasks in CTE `cte`, for insertAuditRows. */
export function moveAuditRows(part: number | string, cte: string, action: TaskAction): string {
  return `SELECT ${part} AS part, ${seqOf(`${cte}.id`)} AS seq, ${cte}.state_at AS at, 'task:state'::text AS type,
    ${cte}.key AS task_key, NULL::bigint AS job_id, ${cte}.by_session AS session_id,
    ${hostOf(`${cte}.by_session`)} AS host, NULL::bigint AS epoch,
    jsonb_build_object('from', ${cte}.from_state, 'to', ${cte}.to_state, 'action', '${action}',
      'by', ${cte}.state_by, 'reason', ${cte}.state_reason) AS detail
  FROM ${cte} WHERE ${cte}.moved`;
}

/**
 * The detail of the ledger row of a claim taken over past its session's TTL, from CTE `cte`
 * returning the holder's heartbeat_at and ttl_ms; `by` is the session that took it.
 */
export const expiredDetail = (cte: string, by: string): string =>
  `jsonb_build_object('outcome', 'expired', 'heartbeatAt', (extract(epoch FROM ${cte}.heartbeat_at) * 1000)::bigint,
    'ttlMs', ${cte}.ttl_ms, 'takenBy', ${by})`;

/** CTE `oj`: the active job of the task whose id is `taskId` (an SQL expression), locked. */
export const lockActiveJob = (taskId: string): string => `oj AS (
  SELECT id, status, epoch, task_id FROM jobs
  WHERE task_id = ${taskId} AND status IN ('queued', 'claimed', 'running')
  FOR UPDATE
)`;

/**
 * CTEs `je` (the active job `oj` ended with the moved task in `cte`: escalated with an escalated
 * task, cancelled when it left open for done or closed) and `jl` (its workspace lock, unless it
 * was running: its runner releases that once the agent's tree is dead).
 *
 * `je` finds the job by id alone. `oj` locked it and read its newest version, which a placement
 * that committed while `oj` waited for the row may have moved from queued to claimed; the
 * statement's snapshot still sees it queued, so a condition on the status would match nothing
 * and leave a placed job on a task that is done (test/race/done-race.test.ts). Matched by id,
 * the UPDATE re-reads the row's newest version, which nobody can change after `oj`'s lock.
 */
export function endJob(cte: string): string {
  return `je AS (
  UPDATE jobs SET status = CASE WHEN ${cte}.to_state = 'escalated' THEN 'escalated' ELSE 'cancelled' END,
    finished_at = ${cte}.state_at,
    reason = CASE WHEN ${cte}.to_state = 'escalated' THEN 'escalated: ' || coalesce(${cte}.state_reason, '')
      ELSE 'task ' || ${cte}.to_state || ' by ' || ${cte}.state_by
        || coalesce(': ' || ${cte}.state_reason, '') END
  FROM oj, ${cte}
  WHERE jobs.id = oj.id AND ${cte}.moved AND ${cte}.from_state = 'open'
    AND ${cte}.to_state <> 'in_review'
  RETURNING jobs.id, jobs.status, jobs.epoch, jobs.reason, jobs.finished_at, oj.status AS was, ${cte}.key,
    ${cte}.by_session
), jl AS (
  DELETE FROM workspace_locks USING je WHERE workspace_locks.job_id = je.id AND je.was <> 'running'
  RETURNING workspace_locks.workspace, workspace_locks.job_id, workspace_locks.session_id,
    workspace_locks.epoch
)`;
}

/** Ledger rows of endJob (parts `part` and `part + 1`), for insertAuditRows. */
export function endJobAuditRows(part: number): string {
  return `SELECT ${part} AS part, ''::text AS seq, je.finished_at AS at,
    CASE WHEN je.status = 'escalated' THEN 'job:finished' ELSE 'job:cancelled' END AS type,
    je.key AS task_key, je.id AS job_id, je.by_session AS session_id, ${hostOf('je.by_session')} AS host,
    je.epoch, CASE WHEN je.status = 'escalated'
      THEN jsonb_build_object('status', je.status, 'reason', je.reason)
      ELSE jsonb_build_object('reason', je.reason) END AS detail
  FROM je
  UNION ALL
  ${lockReleasedRows(part + 1, 'jl', 'je.finished_at', `'released'`, 'je')}`;
}

/** Every task column but those moveReturning gives, qualified by `tasks.`, for a full row. */
const TASK_REST = `tasks.title, tasks.priority, tasks.project, tasks.assignee, tasks.labels, tasks.created_at,
  tasks.epoch, tasks.holder_session_id, tasks.claimed_at, tasks.state, tasks.gate, tasks.review_required,
  tasks.body, tasks.url, tasks.feedback, tasks.feedback_from`;

/**
 * One statement moving task $1 by `m` when its state allows (none of its rows when not): its
 * active job locked (`oj`, before the task), the task locked (`o`) for the state it leaves, the
 * move, the end of the job and the ledger rows. `extraSet` adds assignments to the task's UPDATE.
 * Run it in a transaction that locked the task row first, so its snapshot sees every job an
 * enqueue (which holds the task row FOR SHARE) committed before: a task that leaves open keeps
 * no active job. Returns the moved task's full row (TaskRow columns and the move's own).
 */
export function moveSql(move: Move, extraSet: string): string {
  return `WITH ${lockActiveJob('(SELECT id FROM tasks WHERE key = $1::text)')}, o AS (
    SELECT * FROM tasks WHERE key = $1::text AND (SELECT count(*) FROM oj) >= 0 FOR UPDATE
  ), t AS (
    UPDATE tasks SET ${extraSet}${moveSet(move, 'o')}
    FROM o WHERE tasks.id = o.id AND ${moves(move, 'o')}
    RETURNING ${moveReturning(move, 'o')}, ${TASK_REST}
  ), ${endJob('t')}, a AS (
    ${insertAuditRows(`${moveAuditRows(0, 't', move.action)} UNION ALL ${endJobAuditRows(1)}`)}
  )
  SELECT * FROM t`;
}

/**
 * A job that ended done finishes its task: from open to done, or to in review
 * when the task requires it. `f` names the finished jobs.
 */
const FINISH_TASK: Move = {
  action: 'finish',
  at: 'f.finished_at',
  by: `'job ' || f.id`,
  session: 'f.session_id',
  reason: 'NULL::text',
};

/**
 * JSON to add (`||`) to the detail of the `job:finished` row of a job in `f`: `task`, the move its
 * end made in `ts` (FINISH_TASK_STEP), if any. The finish's one row records it; no `task:state`
 * row is written beside it (decision 0023). A finish leaves only `open` and leads to one of
 * FINISH_TO, so the move is known from which of `ts`'s targets holds the job's task: one
 * `IN (subquery)` per target, which PostgreSQL runs as a hashed subplan, built once per statement
 * and probed per row. A join of `f` and `ts` would compare every pair, as the planner cannot
 * know their sizes and picks a nested loop (250,000 comparisons for a batch of 500); aggregating
 * the moves into one JSON object and reading it per row cost 12 µs of server CPU per job of a
 * batch drain (decision 0017).
 */
export const FINISHED_TASK_JSON = `CASE ${Object.values(FINISH_TO)
  .map(
    (to) =>
      `WHEN f.task_id IN (SELECT ts.id FROM ts WHERE ts.to_state = '${to}')
      THEN '${JSON.stringify({ task: { from: TASK_ACTION_FROM.finish[0], to } })}'::jsonb`,
  )
  .join('\n    ')}
    ELSE '{}'::jsonb END`;

/** JSON to add (`||`) to a `job:finished` row's detail: the finish's reason, when it gave one. */
export const FINISHED_REASON_JSON =
  "CASE WHEN f.reason IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('reason', f.reason) END";

/** CTE `ts`: the open tasks of the jobs in `f` that ended done, moved by FINISH_TASK. */
export const FINISH_TASK_STEP = `ts AS (
  UPDATE tasks SET ${moveSet(FINISH_TASK, 'tasks')}
  FROM f WHERE tasks.id = f.task_id AND f.status = 'done' AND tasks.state = 'open'
  RETURNING ${moveReturning(FINISH_TASK, 'tasks')}
)`;
