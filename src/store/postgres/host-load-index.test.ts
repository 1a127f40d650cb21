import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { HOST_LIST } from './hosts.js';
import { openPostgresStore } from './postgres-store.js';

// The plan, not the speed: with jobs.host in another collation than hosts.name, no index on
// jobs.host can serve the join, and every host reads every active job of the fleet (issue 22).
test("hosts.list finds each host's active jobs through jobs_active_by_host", async () => {
  const server = postgresServers()[0];
  assert.ok(server !== undefined);
  const url = await postgresDatabase(server).fresh();
  await (await openPostgresStore({ url })).close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // An empty table would be read whole; forbid that, so the plan shows which indexes can serve.
    await client.query('SET enable_seqscan = off');
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${HOST_LIST}`);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /Index Scan using jobs_active_by_host on jobs j/, plan);
    assert.match(plan, /Index Cond: \(host = h\.name\)/, plan);
  } finally {
    await client.end();
  }
});
