/**
 * The backlog's page on PostgreSQL (observe.tasksPage): tasks newest first, an index scan
 * backwards on the primary key from the keyset `id < $1`, which stops after $6 matches, as the
 * queue's page does (observe.ts). Each row's blockers and active job are index probes for the
 * page's rows only (test/dashboard/tasks-scale.test.ts counts the rows read at 100,000 tasks). The
 * blocked filter's EXISTS ends in OFFSET 0, which keeps the planner from turning it into a hashed
 * subplan: that reads every dependency in the table once, where a probe per row reads a page's.
 */
import type { JobState } from '../../core/job.js';
import { ACTIVE_SQL } from '../job-guard.js';
import type { TaskHold, TaskPageParams, TaskPageRow } from '../observe-store.js';
import { blockerOf } from './claim-set.js';
import { BLOCKERS, CAN_WAIT } from '../task-list.js';
import { TASK_COLUMNS, toTask, type TaskRow } from './rows.js';
import type { PgExecutor } from './executor.js';

export const TASK_PAGE_SQL = `SELECT ${TASK_COLUMNS},
    (SELECT coalesce(json_agg(b.key ORDER BY b.key), '[]'::json) ${BLOCKERS}) AS blockers,
    (SELECT j.id FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ${ACTIVE_SQL}) AS job_id,
    (SELECT j.status FROM jobs j WHERE j.task_id = tasks.id AND j.status IN ${ACTIVE_SQL}) AS job_status
  FROM tasks
  WHERE id < $1::bigint
    AND ($2::text[] IS NULL OR state = ANY ($2::text[]))
    AND ($3::text IS NULL OR project = $3::text)
    AND ($4::text IS NULL OR labels ? $4::text)
    AND (NOT $5::boolean OR (${CAN_WAIT} AND EXISTS (SELECT 1 ${BLOCKERS} OFFSET 0)))
  ORDER BY id DESC
  LIMIT $6::int`;

interface PageRow extends TaskRow {
  blockers: string[];
  job_id: number | null;
  job_status: JobState | null;
}

export async function tasksPage(exec: PgExecutor, params: TaskPageParams): Promise<TaskPageRow[]> {
  const rows = await exec.rows<PageRow>(TASK_PAGE_SQL, [
    params.beforeId ?? Number.MAX_SAFE_INTEGER,
    params.states ?? null,
    params.project ?? null,
    params.label ?? null,
    params.blocked === true,
    params.limit,
  ]);
  return rows.map((row) => ({
    id: Number(row.id),
    task: toTask(row),
    blockers: row.blockers,
    job:
      row.job_id === null || row.job_status === null
        ? null
        : { id: Number(row.job_id), status: row.job_status },
  }));
}

const HOLDS = `SELECT key, gate, blocker FROM (
    SELECT t.key, t.gate, ${blockerOf('t')} AS blocker FROM tasks t
    WHERE t.key = ANY ($1::text[]) AND t.state = 'open'
  ) held WHERE gate IS NOT NULL OR blocker IS NOT NULL`;

/** observe.taskHolds. */
export function taskHolds(exec: PgExecutor, keys: readonly string[]): Promise<TaskHold[]> {
  return exec.rows<TaskHold>(HOLDS, [[...keys]]);
}
