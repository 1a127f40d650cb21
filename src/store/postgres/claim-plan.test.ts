/**
 * The plan of a claim, not its speed (issue 22's "claim cost at 1M queued ≤ 1.2× at 1k"): with
 * statistics that say almost every task is open, the claim must still look up each candidate's
 * task by its key in queue order, never read the tasks table whole before its first job. A
 * NOT EXISTS over closed or gated tasks was planned as one scan of every task per claim (400 ms
 * at 1M queued).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresClient, seedQueue } from '../../../test/support/databases.js';
import { takeQueued } from './claim-set.js';
import { CLAIM_NEXT } from './job-steps.js';

const QUEUED = 20_000;
let client: pg.Client;

before(async () => {
  client = await freshPostgresClient();
  await seedQueue(client, QUEUED, true);
});

after(() => client.end());

test('a claim looks up its candidates’ tasks by key, in queue order, and reads no table whole', async () => {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${CLAIM_NEXT}`, [
    1,
    null,
    false,
    null,
    null,
  ]);
  const p = rows.map((r) => r['QUERY PLAN']).join('\n');
  assert.match(p, /Index Scan using jobs_queue on jobs/, p);
  assert.match(p, /Index Scan using tasks_pkey on tasks t/, p);
  assert.doesNotMatch(p, /Seq Scan on (tasks|jobs)/, p);
});

// The batch take runs inside a PL/pgSQL function, where EXPLAIN cannot see: auto_explain
// reports the plan of the statement nested in it, as a notice to this client.
test('the batch take (baton_take_queued) does the same inside its function', async () => {
  const plans: string[] = [];
  const onNotice = (n: { message?: string | undefined }): void => {
    if (n.message !== undefined) plans.push(n.message);
  };
  client.on('notice', onNotice);
  try {
    await client.query('BEGIN');
    await client.query("LOAD 'auto_explain'");
    await client.query('SET LOCAL auto_explain.log_min_duration = 0');
    await client.query('SET LOCAL auto_explain.log_nested_statements = on');
    await client.query("SET LOCAL auto_explain.log_level = 'notice'");
    const { rows } = await client.query('SELECT * FROM baton_take_queued(8, now())');
    assert.equal(rows.length, 8);
  } finally {
    await client.query('ROLLBACK');
    client.off('notice', onNotice);
  }
  const p = plans.find((m) => m.includes('FOR UPDATE OF jobs SKIP LOCKED'));
  assert.ok(p !== undefined, `auto_explain reported the take's plan: ${plans.join('\n---\n')}`);
  assert.match(p, /Index Scan using tasks_pkey on tasks t/, p);
  assert.doesNotMatch(p, /Seq Scan on (tasks|jobs)/, p);
});

// The function's body is generated from takeQueued when a migration creates it (0022): a change to
// takeQueued, or to the rule it shares with claimNext and placement, needs a migration of its own.
test('baton_take_queued in the database is the take the code describes', async () => {
  const { rows } = await client.query<{ src: string }>(
    "SELECT prosrc AS src FROM pg_proc WHERE proname = 'baton_take_queued'",
  );
  assert.equal(rows.length, 1);
  assert.ok(rows[0]?.src.includes(takeQueued('n', 'due')), `a migration recreates it: ${rows[0]?.src}`);
});
