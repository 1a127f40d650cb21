/**
 * The plans a kept connection runs once a statement has run five times: PostgreSQL's generic
 * plan, made for any parameter values and, on a young database, for tables without statistics.
 * A row the statement has already found (the claimed job, the task being queued) must be looked
 * up by its id as a value, not joined: joined, the generic plans of claimNext, enqueue and retry
 * walked every queued or every active job in the index, 29 ms per enqueue and 34 ms per claim
 * once 50,000 jobs were queued behind a plan cached while the queue was empty
 * (docs/decisions/0002, "Session of 2026-12-03 (latency3)").
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresStore } from '../../../test/support/databases.js';
import { genericPlan as planFor } from '../../../test/support/pg-generic-plan.js';
import { statementsOf } from '../../../test/support/pg-statements.js';
import type { Store } from '../store.js';
import { CLAIM_NEXT } from './job-steps.js';
import { DROP_SQL, SHRINK_SQL } from './output-trim.js';
import { PRUNE } from './retention.js';
import { LIST_LIVE } from './tokens.js';

let client: pg.Client;
let store: Store;

before(async () => {
  ({ client, store } = await freshPostgresStore());
});

after(async () => {
  await store.close();
  await client.end();
});

/** A parameter computed once for the statement, as PostgreSQL 15 ($n) or 17 (InitPlan n).col1 prints it. */
const VALUE = String.raw`(\$\d+|\(InitPlan \d+\)\.col1)`;

const genericPlan = (sql: string, params: string): Promise<string> => planFor(client, sql, params);

test('the claim updates the job it locked through jobs_pkey, not by walking the queue', async () => {
  const plan = await genericPlan(CLAIM_NEXT, '1, NULL, true, NULL, NULL');
  // The first update of jobs is the claim's (`j`; `r` takes a hand-off back).
  const byKey = String.raw`Update on jobs (jobs_\d+)\n(.*\n)*? +-> {2}Index Scan using jobs_pkey on jobs \1\n`;
  assert.match(plan, new RegExp(String.raw`${byKey} +Index Cond: \(id = ${VALUE}\)`), plan);
});

test('enqueue and retry look for the task’s active job by the task’s id', async () => {
  const [enqueue] = await statementsOf(() => store.jobs.enqueue({ key: 'plan-a' }));
  const session = await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
  const job = await store.jobs.claimNext({ session: session.id, start: true });
  assert.ok(job !== null && enqueue !== undefined);
  await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status: 'failed' });
  const retries = await statementsOf(() => store.jobs.retry({ id: job.id, actor: 'test' }));
  const retry = retries.find((text) => text.includes('INSERT INTO jobs'));
  assert.ok(retry !== undefined, retries.join('\n'));
  const plans = [
    await genericPlan(enqueue, "'plan-b', NULL, NULL, NULL, NULL, NULL, 100, NULL, NULL"),
    await genericPlan(retry, `${job.id}, NULL, NULL, false, NULL`),
  ];
  for (const plan of plans) {
    const byTask = String.raw`CTE active\n +-> {2}Index Scan using \w+ on jobs j\n +Index Cond: \(task_id = ${VALUE}\)`;
    assert.match(plan, new RegExp(byTask), plan);
  }
});

// The output trim's walks (output-trim.ts) run every minute on a kept connection: a generic plan
// that bitmap-scans jobs_finished and sorts every job after the cursor would read the whole
// log-keep window each pass.
for (const [name, sql, first] of [
  ['shrink', SHRINK_SQL, '65536'],
  ['drop', DROP_SQL, '1700000000000'],
] as const) {
  test(`the output trim's ${name} walk seeks jobs_finished from its cursor, in order`, async () => {
    const plan = await genericPlan(sql, `${first}, '2026-01-01 00:00:00+00', 7, 500, 10000`);
    assert.match(plan, /Index (Only )?Scan using jobs_finished on jobs/, plan);
    assert.doesNotMatch(plan, /Bitmap Heap Scan on jobs|Sort Key: jobs\.finished_at/, plan);
  });
}

test('a retention batch reaches run tokens by job id, never by reading every token per candidate', async () => {
  // No term; a retention of 1 s; 500 jobs; no actor; the cursor and window from before any job to
  // after all (as retention.ts passes them); batch number 1.
  const params = "NULL, NULL, NULL, 1000, 500, NULL, '-62135596800000000', 0, '253402300799999999', 0, 1";
  const plan = await genericPlan(PRUNE, params);
  // Before migration 0041, `NOT IN (SELECT job_id FROM tokens …)` named the batch's clock, so it
  // was a SubPlan run again for each candidate: a sequential scan of every token per job.
  assert.doesNotMatch(plan, /Seq Scan on tokens/, plan);
  // The delete of the removed jobs' tokens reads them by job (a bitmap or a plain scan of the
  // index, as the planner prices the table; CI70 saw the plain one).
  assert.match(
    plan,
    /Delete on tokens\n(.*\n)*? +-> {2}(Bitmap Index Scan on|Index Scan using) tokens_by_job/,
    plan,
  );
});

test('the token list reads the unrevoked tokens through tokens_live', async () => {
  const plan = await genericPlan(LIST_LIVE, '');
  assert.doesNotMatch(plan, /Seq Scan on tokens/, plan);
  assert.match(plan, /Index Scan (on|using) tokens_live/, plan);
});
