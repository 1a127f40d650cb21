/**
 * The plans of the reads of live tasks, not their speed: `next`, auto-enqueue's unqueued tasks,
 * the review queue and the gated list each reach the tasks of one state through tasks_live
 * (migration 0040), so their cost grows with the live tasks, never with the done and closed ones
 * a backlog accumulates (docs/decisions/0043). The executor names and keeps its statements, so
 * the plans checked are the generic ones PostgreSQL may use after five runs, for any values.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresClient } from '../../../test/support/databases.js';
import { genericPlan as planFor } from '../../../test/support/pg-generic-plan.js';
import type { TaskListParams } from '../task-list.js';
import { NEXT } from './lifecycle.js';
import { listSql } from './task-list.js';

let client: pg.Client;

before(async () => {
  client = await freshPostgresClient();
});

after(() => client.end());

/** The generic plan of `sql` for `values`, given as literals. */
function genericPlan(sql: string, values: readonly unknown[]): Promise<string> {
  const literals = values.map((value) =>
    value === null ? 'NULL' : `'${String(value as string | number | boolean)}'`,
  );
  return planFor(client, sql, literals.join(', '));
}

test("next picks from the open tasks through tasks_live, in next's order", async () => {
  const p = await genericPlan(NEXT, [1, null, null]);
  assert.match(p, /Index Scan using tasks_live on tasks t/, p);
  assert.match(p, /Index Cond: \(state = 'open'::text\)/, p);
  // An expired holder's session is locked (FOR SHARE SKIP LOCKED, re-checked: decision 0058) in
  // the filter of that ordered scan, below the task's LockRows: only holders of the tasks read
  // are locked, and each before its task.
  const cand = p.slice(p.indexOf('CTE cand'), p.indexOf('CTE o\n'));
  assert.match(cand, /Index Scan using tasks_live on tasks t/, p);
  assert.match(
    cand,
    /SubPlan \d+\n\s+->  LockRows\n\s+->  Index Scan using sessions_pkey on sessions h\n/,
    p,
  );
  assert.doesNotMatch(cand, /Sort/, p);
});

for (const [name, params] of [
  ["auto-enqueue's unqueued tasks", { unqueued: true }],
  ['the review queue', { state: 'in_review' }],
  ['the gated list', { state: 'open', gated: true }],
  ['the escalated list', { state: 'escalated' }],
] as const satisfies readonly (readonly [string, TaskListParams])[]) {
  test(`${name} reads its state's tasks through tasks_live, for any values`, async () => {
    const { sql, values } = listSql(params);
    const p = await genericPlan(sql, values);
    assert.match(p, /Index (Only )?Scan using tasks_live on tasks/, p);
    assert.match(p, /Index Cond: \(state = /, p);
    assert.doesNotMatch(p, /Seq Scan on tasks$/m, p);
  });
}

// `baton task list` with no state, or a state tasks_live leaves out, and its next pages (decision
// 0045): a walk of tasks_by_priority in the list's order, from the start or from the key after,
// cut at the limit, in the generic plan: never a scan and a sort of every task. On a backlog of
// 20,000 done tasks with statistics, as a team's: on empty tables a sort of nothing is cheapest.
describe('on a backlog of done tasks', () => {
  let backlog: pg.Client;

  before(async () => {
    backlog = await freshPostgresClient();
    await backlog.query(`INSERT INTO tasks (key, priority, created_at, state)
      SELECT 'done-' || g, g % 5, now(), CASE WHEN g % 400 = 0 THEN 'open' ELSE 'done' END
      FROM generate_series(1, 20000) g`);
    await backlog.query('ANALYZE tasks');
  });

  after(() => backlog.end());

  for (const [name, params] of [
    ['the unfiltered list', {}],
    ['the unfiltered next page', { after: 'k' }],
    ['the done tasks', { state: 'done' }],
    ["the done tasks' next page", { state: 'done', after: 'k' }],
  ] as const satisfies readonly (readonly [string, TaskListParams])[]) {
    test(`${name} walks tasks_by_priority in order, with no sort, for any values`, async () => {
      const { sql, values } = listSql(params);
      const literals = values.map((value) => `'${String(value as string | number)}'`).join(', ');
      const p = await planFor(backlog, sql, literals);
      assert.match(p, /Index Scan using tasks_by_priority on tasks\b/, p);
      if (params.after !== undefined) assert.match(p, /Index Cond: \(ROW\(priority, key\) > ROW\(/, p);
      assert.doesNotMatch(p, /Sort Key: (tasks\.)?priority|Seq Scan on tasks$/m, p);
    });
  }
});
