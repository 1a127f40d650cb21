/**
 * The one place SQLite changes a task's state (core/task.ts), inside the caller's BEGIN
 * IMMEDIATE transaction: the guarded update, its `task:state` ledger row with who made it (a job's
 * finish records the move in its own `job:finished` row instead, decision 0023), and,
 * when the task leaves `open` for good, the end of its active job (cancelled, or escalated with
 * the task) and of that job's workspace lock. Every path that moves a task comes through here
 * (a job's finish through moveTask), so the outbox rows the tasks table's triggers write are
 * written once per move.
 */
import { assert } from '../../core/assert.js';
import type { TaskMove } from '../../core/audit-event.js';
import { planTaskTransition, type TaskAction, type TaskState } from '../../core/task.js';
import { taskStateRefusal, type TaskStateFacts } from '../task-refusal.js';
import { releaseJobLocks } from './locks.js';
import { stateFactsOf } from '../rows.js';
import { SQLITE, appendAudit, type TaskRow } from './rows.js';
import type { SqliteExecutor } from './executor.js';

export interface StateChange {
  readonly action: TaskAction;
  /** Who: in words ("job 12", "session 7", "alice@box"), and the session to audit, if any. */
  readonly by: { readonly name: string; readonly session?: number | null | undefined };
  readonly reason?: string | null | undefined;
}

export const facts = (task: TaskRow): TaskStateFacts => stateFactsOf(SQLITE, task);

/** Moves the task (its row as read in this transaction); TaskStateError when the action may not. */
export function changeTaskState(
  exec: SqliteExecutor,
  now: number,
  task: TaskRow,
  change: StateChange,
): TaskRow {
  const { row, move } = moveTask(exec, now, task, change);
  appendAudit(exec, {
    at: now,
    type: 'task:state',
    key: task.key,
    session: change.by.session ?? null,
    detail: { ...move, action: change.action, by: change.by.name, reason: change.reason ?? null },
  });
  if (move.from === 'open' && move.to !== 'in_review') endActiveJob(exec, now, row, change);
  return row;
}

/**
 * The guarded update of changeTaskState alone, without its ledger row or the end of an active job:
 * for a job's finish, whose `job:finished` row records the move (decision 0023) and whose job,
 * the task's only active one, has just ended.
 */
export function moveTask(
  exec: SqliteExecutor,
  now: number,
  task: TaskRow,
  change: StateChange,
): { readonly row: TaskRow; readonly move: TaskMove } {
  const plan = planTaskTransition(
    { state: task.state as TaskState, reviewRequired: task.review_required === 1 },
    change.action,
  );
  if (!plan.ok) throw taskStateRefusal(facts(task), change.action);
  const reason = change.reason ?? null;
  const [feedback, from] = feedbackAfter(task, change.action, plan.to, reason);
  const row = exec
    .prepare(
      `UPDATE tasks SET state = ?, state_at = ?, state_by = ?, state_reason = ?, feedback = ?, feedback_from = ?
       WHERE id = ? AND state = ? RETURNING *`,
    )
    .get(plan.to, now, change.by.name, reason, feedback, from, task.id, plan.from) as TaskRow | undefined;
  assert(row !== undefined, 'the task row read in this transaction is the one updated');
  return { row, move: { from: plan.from, to: plan.to } };
}

/**
 * The feedback a move leaves for the next run, and which answer it is: a rejection's reason (from
 * review), a resolve's note (from escalation; a resolve without one keeps what was there), none
 * once done (feedback_from is read only beside a feedback). PostgreSQL's feedbackSet is the same.
 */
function feedbackAfter(
  task: TaskRow,
  action: TaskAction,
  to: TaskState,
  reason: string | null,
): readonly [string | null, string] {
  if (action === 'reject' || (action === 'resolve' && reason !== null)) {
    return [reason, action === 'reject' ? 'review' : 'escalation'];
  }
  return [to === 'done' ? null : task.feedback, task.feedback_from];
}

/**
 * A task that left `open` (done, closed, escalated) keeps no active job: it would never be placed.
 * The job ends `escalated` with an escalated task, `cancelled` otherwise; its workspace lock goes
 * with it unless it was running (its runner releases that lock once the agent's tree is dead).
 */
function endActiveJob(exec: SqliteExecutor, now: number, task: TaskRow, change: StateChange): void {
  const job = exec
    .prepare(
      `SELECT id, status, epoch FROM jobs WHERE task_id = ? AND status IN ('queued', 'claimed', 'running')`,
    )
    .get(task.id) as { id: number; status: string; epoch: number } | undefined;
  if (job === undefined) return;
  const escalated = task.state === 'escalated';
  const status = escalated ? 'escalated' : 'cancelled';
  const reason = escalated
    ? `escalated: ${change.reason ?? ''}`
    : `task ${task.state} by ${change.by.name}${change.reason == null ? '' : `: ${change.reason}`}`;
  exec
    .prepare(`UPDATE jobs SET status = ?, finished_at = ?, reason = ? WHERE id = ? AND status = ?`)
    .run(status, now, reason, job.id, job.status);
  appendAudit(exec, {
    at: now,
    type: escalated ? 'job:finished' : 'job:cancelled',
    key: task.key,
    jobId: job.id,
    session: change.by.session ?? null,
    epoch: job.epoch,
    detail: escalated ? { status, reason } : { reason },
  });
  if (job.status !== 'running') releaseJobLocks(exec, now, job.id, 'released');
}
