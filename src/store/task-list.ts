/**
 * What a task list asks for (`store.tasks.list`), and the one condition in it that is more than a
 * column's value: the open tasks nothing will work unless someone queues a job, as SQL both engines
 * splice in (`unqueued`; what `auto-enqueue` queues, coordinator/auto-enqueue.ts):
 * open, no gate, no live claim (a person or an agent holds it), no active job, and no job queued
 * since the task last became open. A task is open again, with a new state_at, once a reviewer
 * rejects it, an escalation is resolved or GitHub reopens its issue: it qualifies again. A task
 * whose job failed or was cancelled stays open with its old state_at and does not: a failure is
 * retried by its job's own attempts, and a person decides after that, so nothing loops.
 */
import type { Task, TaskState } from '../core/task.js';
import { ACTIVE_SQL } from './job-guard.js';

export interface TaskListParams {
  readonly project?: string | undefined;
  readonly assignee?: string | undefined;
  readonly label?: string | undefined;
  readonly state?: TaskState | undefined;
  /** true: only open tasks waiting behind a gate (a closed or done task keeps its gate); false: the others. */
  readonly gated?: boolean | undefined;
  /** true: only tasks that wait for a task not done (BLOCKERS below); false: only those that wait for none. */
  readonly blocked?: boolean | undefined;
  /** true: only the open tasks nothing will work unless someone queues a job (UNQUEUED below). */
  readonly unqueued?: boolean | undefined;
  /**
   * The key of the last task of the page before: only the tasks after it in the list's order
   * (priority, then key), read from where it stands by the `tasks_by_priority` index (keyset paging).
   */
  readonly after?: string | undefined;
  readonly limit?: number | undefined;
}

/** The condition on a row of `tasks` (named tasks), on either engine. */
export const UNQUEUED = `tasks.state = 'open' AND tasks.gate IS NULL
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = tasks.id AND c.released_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = tasks.id
    AND (j.status IN ${ACTIVE_SQL} OR j.queued_at >= coalesce(tasks.state_at, tasks.created_at)))`;

/**
 * A task that can still wait: not done and not closed. "Blocked" (task list --blocked, the Tasks
 * page's "blocked only") is such a task with a dependency not done; a finished task waits for nothing.
 */
export const CAN_WAIT = `tasks.state NOT IN ('done', 'closed')`;

/** A listed task, with the keys of the tasks it waits for that are not done, in key order. */
export interface ListedTask extends Task {
  readonly waitsFor: readonly string[];
}

/**
 * The tasks a row of `tasks` (named tasks) waits for that are not done (a closed one still
 * blocks: decision 0035), as the rest of a subquery: a probe of task_deps' primary key per row.
 */
export const BLOCKERS = `FROM task_deps d JOIN tasks b ON b.id = d.depends_on
  WHERE d.task_id = tasks.id AND b.state <> 'done'`;
