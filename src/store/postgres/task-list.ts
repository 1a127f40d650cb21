/**
 * `tasks.list` on PostgreSQL: the statement holds only the filters asked for, as SQLite's does
 * (sqlite/tasks-claims.ts listSql). The executor names and keeps its statements, so after five
 * runs PostgreSQL may plan one for any values: a `$n IS NULL OR …` filter then reads every task,
 * where `state = $1` reads its state's range of tasks_live (docs/decisions/0043; task-plans.test.ts
 * checks the generic plans).
 */
import { BLOCKERS, CAN_WAIT, UNQUEUED, type TaskListParams } from '../task-list.js';
import { TASK_COLUMNS } from './rows.js';

/** The states tasks_live holds (migration 0040). */
const LIVE: ReadonlySet<string> = new Set(['open', 'in_review', 'escalated']);

/** The statement and its values for `params`. */
export function listSql(params: TaskListParams): { readonly sql: string; readonly values: unknown[] } {
  const values: unknown[] = [params.limit ?? 1000];
  const terms = ['true'];
  const value = (given: unknown, type: string): string => `$${values.push(given)}::${type}`;
  if (params.project !== undefined) terms.push(`project = ${value(params.project, 'text')}`);
  if (params.assignee !== undefined) terms.push(`assignee = ${value(params.assignee, 'text')}`);
  // A live state as a literal: a generic plan cannot prove `state = $n` implies tasks_live's predicate.
  if (params.state !== undefined) {
    terms.push(
      LIVE.has(params.state) ? `state = '${params.state}'` : `state = ${value(params.state, 'text')}`,
    );
  }
  if (params.label !== undefined) terms.push(`labels ? ${value(params.label, 'text')}`);
  if (params.gated !== undefined)
    terms.push(`${params.gated ? '' : 'NOT '}(gate IS NOT NULL AND state = 'open')`);
  if (params.unqueued === true) terms.push(`(${UNQUEUED})`);
  if (params.blocked !== undefined) {
    terms.push(`${params.blocked ? '' : 'NOT '}(${CAN_WAIT} AND EXISTS (SELECT 1 ${BLOCKERS} OFFSET 0))`);
  }
  // The page after a task: a range of tasks_by_priority from where it stands (docs/decisions/0045).
  if (params.after !== undefined) {
    const after = value(params.after, 'text');
    terms.push(`(priority, key) > ((SELECT a.priority FROM tasks a WHERE a.key = ${after}), ${after})`);
  }
  const sql = `SELECT ${TASK_COLUMNS},
    (SELECT coalesce(json_agg(b.key ORDER BY b.key), '[]'::json) ${BLOCKERS}) AS waits_for
  FROM tasks WHERE ${terms.join(' AND ')} ORDER BY priority, key LIMIT $1::int`;
  return { sql, values };
}
