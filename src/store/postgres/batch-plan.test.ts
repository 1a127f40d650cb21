/**
 * The plan of jobs.batch, not its speed: the statement is planned for the values of each call.
 * Prepared once per connection, PostgreSQL switched it to a generic plan after five runs, planned
 * for arrays of unknown length and for the statistics of a queue in which no job had run yet: the
 * finish step then re-read the finish list once per job the session held (500 × 500 rows: 83-100
 * ms, against 12-24 ms planned for the values; docs/decisions/0017, "Measured design").
 *
 * And no step of the statement is read again for each member of another: the finish rows' task
 * moves (decision 0023) were first a join of the finish step and the task step, which the planner,
 * blind to their sizes, ran as a nested loop (250,000 rows read for a batch of 500).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import pg from 'pg';
import { freshPostgresUrl, seedQueue } from '../../../test/support/databases.js';
import { statementsOf } from '../../../test/support/pg-statements.js';
import { openStore } from '../open.js';
import type { Store } from '../store.js';
import { PgExecutor } from './executor.js';
import { jobBatch } from './job-batch.js';
import type { Job, JobTransitionResult } from '../../core/job.js';

const QUEUED = 400;
const BATCH = 40;
let url: string;
let store: Store;
let pool: pg.Pool;

before(async () => {
  url = await freshPostgresUrl();
  store = await openStore(url);
  pool = new pg.Pool({ connectionString: url, max: 1 });
  // Statistics of a queue before its first run: no job is claimed or running.
  await seedQueue(pool, QUEUED, true);
});

after(async () => {
  await pool.end();
  await store.close();
});

test('a batch is planned for its own finish list and take, however many batches its connection ran', async () => {
  const session = await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
  // One connection: every batch below runs on it, as a worker loop's batches do on a warm pool.
  const exec = new PgExecutor(pool, 'test');
  const lost = (id: number): Promise<JobTransitionResult> =>
    assert.fail(`no member of these batches is fenced, but job ${id} was`);
  const params = { session: session.id, take: BATCH, leaseMs: 60_000 };
  let r = await jobBatch(exec, params, lost, () => undefined);
  for (let i = 0; i < 8; i++) {
    const finish = r.taken.map((j) => ({ id: j.id, epoch: j.epoch, status: 'done' as const }));
    r = await jobBatch(exec, { ...params, finish }, lost, () => undefined);
    assert.equal(r.taken.length, BATCH);
  }
  const { rows } = await pool.query<{ generic: string }>(
    `SELECT coalesce(sum(generic_plans), 0) AS generic FROM pg_prepared_statements
     WHERE statement LIKE 'WITH seen AS%'`,
  );
  assert.equal(Number(rows[0]?.generic), 0, 'no batch ran a generic plan');
});

/** The plan's nodes, depth first. */
function planNodes(node: Record<string, unknown>): Record<string, unknown>[] {
  const children = (node['Plans'] ?? []) as Record<string, unknown>[];
  return [node, ...children.flatMap(planNodes)];
}

test('a batch reads each step of its statement once, not once per member', async () => {
  const session = await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
  const exec = new PgExecutor(pool, 'test');
  const lost = (id: number): Promise<JobTransitionResult> => assert.fail(`job ${id} was fenced`);
  let taken: readonly Job[] = [];
  // The statement's text, as the driver receives it.
  const texts = await statementsOf(async () => {
    ({ taken } = await jobBatch(
      exec,
      { session: session.id, take: BATCH, leaseMs: 60_000 },
      lost,
      () => undefined,
    ));
  });
  const text = texts.find((sql) => sql.includes('baton_take_queued'));
  assert.ok(text !== undefined && taken.length === BATCH);
  // Finish them all done (each moves its task) and take the next batch, planned and run for real.
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
      [
        session.id,
        null,
        BATCH,
        60_000,
        taken.map((job) => job.id),
        taken.map((job) => job.epoch),
        taken.map(() => 'done'),
        taken.map(() => 0),
        taken.map(() => null),
        taken.map(() => null),
      ],
    );
    await client.query('ROLLBACK');
    const plan = rows[0]?.['QUERY PLAN'][0].Plan;
    assert.ok(plan !== undefined);
    const nodes = planNodes(plan);
    assert.ok(
      nodes.some(
        (node) =>
          node['Operation'] === 'Update' &&
          node['Relation Name'] === 'tasks' &&
          node['Actual Rows'] === BATCH,
      ),
      "the batch moved every member's task",
    );
    // A CTE of many rows scanned again for each row of another step compares every pair: 1,600
    // rows read for a batch of 40, 250,000 for one of 500 (a join of the finish and the task move).
    const read = (node: Record<string, unknown>): number =>
      Number(node['Actual Rows']) + Number(node['Rows Removed by Filter'] ?? 0);
    const rescans = nodes
      .filter((node) => node['Node Type'] === 'CTE Scan')
      .filter((node) => Number(node['Actual Loops']) > 1 && read(node) > 1)
      .map(
        (node) => `${String(node['CTE Name'])}: ${read(node)} rows × ${String(node['Actual Loops'])} loops`,
      );
    assert.deepEqual(rescans, []);
  } finally {
    client.release();
  }
});
