/**
 * The plans of the reads of live tasks, not their speed: `next`, auto-enqueue's unqueued tasks,
 * the review queue and the gated list each reach the tasks of one state through tasks_live
 * (migration 0040), so their cost grows with the live tasks, never with the done and closed ones
 * a backlog accumulates (docs/decisions/0043). The tables are empty and sequential scans are
 * forbidden: the plan then shows which indexes can serve. The values are sent as the store sends
 * them (an unnamed statement, planned with its values), so the filters not asked for drop out.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresClient } from '../../../test/support/databases.js';
import { NEXT } from './lifecycle.js';
import { LIST_SQL } from './tasks-claims.js';

let client: pg.Client;

before(async () => {
  client = await freshPostgresClient();
  await client.query('SET enable_seqscan = off');
});

after(() => client.end());

async function plan(sql: string, values: unknown[]): Promise<string> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${sql}`, values);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** LIST_SQL's values: project, assignee, limit, state, label, gated, unqueued, blocked. */
const list = (state: string | null, gated: boolean | null, unqueued: boolean): unknown[] => [
  null,
  null,
  100,
  state,
  null,
  gated,
  unqueued,
  null,
];

test("next picks from the open tasks through tasks_live, in next's order", async () => {
  const p = await plan(NEXT, [1, null, null]);
  assert.match(p, /Index Scan using tasks_live on tasks t/, p);
  assert.match(p, /Index Cond: \(state = 'open'::text\)/, p);
});

for (const [name, values, state] of [
  ["auto-enqueue's unqueued tasks", list(null, null, true), 'open'],
  ['the review queue', list('in_review', null, false), 'in_review'],
  ['the gated list', list('open', true, false), 'open'],
  ['the escalated list', list('escalated', null, false), 'escalated'],
] as const) {
  test(`${name} reads the ${state} tasks through tasks_live`, async () => {
    const p = await plan(LIST_SQL, values);
    assert.match(p, /Index (Only )?Scan using tasks_live on tasks/, p);
    assert.match(p, new RegExp(`Index Cond: \\(state = '${state}'::text\\)`), p);
  });
}
