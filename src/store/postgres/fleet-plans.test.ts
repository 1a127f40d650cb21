/**
 * The plans of the queries a dispatcher tick runs against the whole fleet, not their speed: each
 * must reach the active jobs through a partial index, so that its cost grows with the fleet and
 * never with the finished history (issue 22). The tables are empty, so sequential scans are
 * forbidden: the plan then shows which indexes can serve.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { ORPHANED_JOBS } from './dispatch.js';
import { HOST_LIST } from './hosts.js';
import { openPostgresStore } from './postgres-store.js';

let client: pg.Client;

before(async () => {
  const server = postgresServers()[0];
  assert.ok(server !== undefined);
  const url = await postgresDatabase(server).fresh();
  await (await openPostgresStore({ url })).close();
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('SET enable_seqscan = off');
});

after(() => client.end());

async function plan(sql: string, values: unknown[] = []): Promise<string> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${sql}`, values);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

// With jobs.host in another collation than hosts.name, no index on jobs.host can serve the join,
// and every host reads every active job of the fleet.
test("hosts.list finds each host's active jobs through jobs_active_by_host", async () => {
  const p = await plan(HOST_LIST);
  assert.match(p, /Index Scan using jobs_active_by_host on jobs j/, p);
  assert.match(p, /Index Cond: \(host = h\.name\)/, p);
});

test('the rescue sweep reads only the active jobs, never the whole table in id order', async () => {
  const p = await plan(ORPHANED_JOBS, [100]);
  assert.doesNotMatch(p, /jobs_pkey/, p);
  assert.match(p, /(Index|Bitmap Index) Scan (using|on) jobs_active/, p);
});
