/**
 * The plans of the reads of live tasks, not their speed: `next`, auto-enqueue's unqueued tasks,
 * the review queue and the gated list each reach the tasks of one state through tasks_live
 * (migration 0040), so their cost grows with the live tasks, never with the done and closed ones
 * a backlog accumulates (docs/decisions/0043). The list's statement holds only the filters asked
 * for (listSql): SQLite does not drop `@p IS NULL OR …` for a value given, and would scan.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { migratedReadOnly, planSteps } from '../../../test/support/sqlite-plans.js';
import type { TaskListParams } from '../task-list.js';
import { NEXT_CANDIDATE } from './lifecycle.js';
import { HOLDS } from './task-page.js';
import { listSql } from './tasks-claims.js';

let db: Database.Database;

before(async () => {
  db = await migratedReadOnly();
});

after(() => db.close());

/** The plan's steps that read the tasks table itself (not a subquery's). */
function onTasks(sql: string, params: Record<string, unknown>): { steps: string[]; all: string } {
  const steps = planSteps(db, sql, params);
  return { steps: steps.filter((d) => /^(SCAN|SEARCH) (t|tasks)\b/.test(d)), all: steps.join('\n') };
}

test("next picks from the open tasks through tasks_live, in next's order", () => {
  const { steps, all } = onTasks(NEXT_CANDIDATE, { now: 0, project: null, label: null });
  assert.deepEqual(steps, ['SEARCH t USING INDEX tasks_live (state=?)'], all);
  assert.doesNotMatch(all, /TEMP B-TREE/, all);
});

const VALUES = { project: null, assignee: null, state: null, label: null, limit: 100 };

for (const [name, params, state] of [
  ["auto-enqueue's unqueued tasks", { unqueued: true }, 'open'],
  ['the review queue', { state: 'in_review' }, 'in_review'],
  ['the gated list', { state: 'open', gated: true }, 'open'],
  ['the escalated list', { state: 'escalated' }, 'escalated'],
] as const satisfies readonly (readonly [string, TaskListParams, string])[]) {
  test(`${name} reads the ${state} tasks through tasks_live`, () => {
    const { steps, all } = onTasks(listSql(params), { ...VALUES, state: params.state ?? null });
    assert.deepEqual(steps, ['SEARCH tasks USING INDEX tasks_live (state=?)'], all);
  });
}

test("a page's held reasons look its tasks up by key, never through the open tasks", () => {
  const { steps, all } = onTasks(HOLDS, { keys: '["a"]' });
  assert.deepEqual(steps, ['SEARCH t USING INDEX sqlite_autoindex_tasks_1 (key=?)'], all);
});

// `baton task list` with no state, or a state tasks_live leaves out, and its next pages (decision
// 0045): a walk of tasks_by_priority in the list's order, from the start or from the key after
// (`(priority,key)>(?,?)`), cut at the limit: never a scan and a sort of every task.
for (const [name, params, step] of [
  ['the unfiltered list', {}, 'SCAN tasks USING INDEX tasks_by_priority'],
  [
    'the unfiltered next page',
    { after: 'k' },
    'SEARCH tasks USING INDEX tasks_by_priority ((priority,key)>(?,?))',
  ],
  ['the done tasks', { state: 'done' }, 'SCAN tasks USING INDEX tasks_by_priority'],
  [
    "the done tasks' next page",
    { state: 'done', after: 'k' },
    'SEARCH tasks USING INDEX tasks_by_priority ((priority,key)>(?,?))',
  ],
] as const satisfies readonly (readonly [string, TaskListParams, string])[]) {
  test(`${name} walks tasks_by_priority in order, with no sort`, () => {
    const values = { ...VALUES, state: params.state ?? null, after: params.after ?? null };
    const { steps, all } = onTasks(listSql(params), values);
    assert.deepEqual(steps, [step], all);
    assert.doesNotMatch(all, /TEMP B-TREE/, all);
  });
}
