/**
 * The plans of the reads of live tasks, not their speed: `next`, auto-enqueue's unqueued tasks,
 * the review queue and the gated list each reach the tasks of one state through tasks_live
 * (migration 0040), so their cost grows with the live tasks, never with the done and closed ones
 * a backlog accumulates (docs/decisions/0043). The executor names and keeps its statements, so
 * the plans checked are the generic ones PostgreSQL may use after five runs, for any values.
 */
import { after, before, test } from 'node:test';
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
