/**
 * The backlog's page on SQLite (observe.tasksPage): tasks newest first, by keyset on the primary
 * key, as the queue's page is (observe.ts). The filters are checked row by row while the rowid is
 * walked backwards from the cursor, which stops after @limit matches; each row's blockers and
 * active job are index probes (task_deps' key, jobs_one_active_per_task) for the page's rows only
 * (test/dashboard/tasks-scale.test.ts reads the plan at 100,000 tasks).
 */
import type { JobState } from '../../core/job.js';
import { ACTIVE_SQL } from '../job-guard.js';
import type { TaskHold, TaskPageParams, TaskPageRow } from '../observe-store.js';
import { blockerOf, OPEN } from './claim-set.js';
import { BLOCKERS, CAN_WAIT } from '../task-list.js';
import { toTask, type TaskRow } from './rows.js';
import type { SqliteExecutor } from './executor.js';

export const TASK_PAGE_SQL = `SELECT tasks.*,
    (SELECT json_group_array(b.key) ${BLOCKERS}) AS blockers,
    (SELECT j.id FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ${ACTIVE_SQL}) AS job_id,
    (SELECT j.status FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ${ACTIVE_SQL}) AS job_status
  FROM tasks
  WHERE tasks.id < @before
    AND (@states IS NULL OR tasks.state IN (SELECT value FROM json_each(@states)))
    AND (@project IS NULL OR tasks.project = @project)
    AND (@label IS NULL OR EXISTS (SELECT 1 FROM json_each(tasks.labels) WHERE value = @label))
    AND (@blocked = 0 OR (${CAN_WAIT} AND EXISTS (SELECT 1 ${BLOCKERS})))
  ORDER BY tasks.id DESC
  LIMIT @limit`;

interface PageRow extends TaskRow {
  blockers: string;
  job_id: number | null;
  job_status: JobState | null;
}

/** observe.tasksPage, inside the caller's read transaction. */
export function tasksPageIn(exec: SqliteExecutor, params: TaskPageParams): TaskPageRow[] {
  const rows = exec.prepare(TASK_PAGE_SQL).all({
    before: params.beforeId ?? Number.MAX_SAFE_INTEGER,
    states: params.states === undefined ? null : JSON.stringify(params.states),
    project: params.project ?? null,
    label: params.label ?? null,
    blocked: Number(params.blocked === true),
    limit: params.limit,
  }) as PageRow[];
  return rows.map((row) => ({
    id: row.id,
    task: toTask(row),
    // In key order, sorted here: a task waits for a few tasks, and a sort in SQL would be a temporary b-tree.
    blockers: (JSON.parse(row.blockers) as string[]).sort(),
    job: row.job_id === null || row.job_status === null ? null : { id: row.job_id, status: row.job_status },
  }));
}

/** The held reasons of a page's tasks, looked up by key (OPEN: never through tasks_live). */
export const HOLDS = `SELECT key, gate, blocker FROM (
    SELECT t.key, t.gate, ${blockerOf('t')} AS blocker FROM tasks t
    WHERE t.key IN (SELECT value FROM json_each(@keys)) AND ${OPEN('t')}
  ) WHERE gate IS NOT NULL OR blocker IS NOT NULL`;

/** observe.taskHolds, inside the caller's read transaction. */
export function taskHoldsIn(exec: SqliteExecutor, keys: readonly string[]): TaskHold[] {
  return exec.prepare(HOLDS).all({ keys: JSON.stringify(keys) }) as TaskHold[];
}
