/**
 * The plan of jobs.batch, not its speed: the statement is planned for the values of each call.
 * Prepared once per connection, PostgreSQL switched it to a generic plan after five runs, planned
 * for arrays of unknown length and for the statistics of a queue in which no job had run yet: the
 * finish step then re-read the finish list once per job the session held (500 × 500 rows: 83-100
 * ms, against 12-24 ms planned for the values; docs/decisions/0017, "Measured design").
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import pg from 'pg';
import { postgresDatabase, postgresServers, seedQueue } from '../../../test/support/databases.js';
import { openStore } from '../open.js';
import type { Store } from '../store.js';
import { PgExecutor } from './executor.js';
import { jobBatch } from './job-batch.js';
import type { JobTransitionResult } from '../../core/job.js';

const QUEUED = 400;
const BATCH = 40;
let url: string;
let store: Store;
let pool: pg.Pool;

before(async () => {
  const server = postgresServers()[0];
  if (server === undefined) throw new Error('no PostgreSQL server for the tests (BATON_TEST_PG_SERVERS)');
  url = await postgresDatabase(server).fresh();
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
