/**
 * The plans of the queries a dispatcher tick runs against the whole fleet, not their speed: each
 * must reach the active jobs through a partial index, so that its cost grows with the fleet and
 * never with the finished history (issue 22). The tables are empty, so sequential scans are
 * forbidden: the plan then shows which indexes can serve.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { freshPostgresClient } from '../../../test/support/databases.js';
import { ORPHANED_JOBS } from './dispatch.js';
import { takeQueued } from './claim-set.js';
import { CANDIDATES } from './dispatch-pass.js';
import { HOST_FLEET, HOST_LIST } from './hosts.js';
import { genericPlan } from '../../../test/support/pg-generic-plan.js';
import { DUE_SQL } from './time-limit-sweep.js';

let client: pg.Client;

before(async () => {
  client = await freshPostgresClient();
  await client.query('SET enable_seqscan = off');
});

after(() => client.end());

async function plan(sql: string, values: unknown[] = []): Promise<string> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${sql}`, values);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

// With jobs.host in another collation than hosts.name, no index on jobs.host can serve the join,
// and every host reads every active job of the fleet.
for (const [name, sql] of [
  ['hosts.list', HOST_LIST],
  ['hosts.fleet', HOST_FLEET],
] as const) {
  test(`${name} finds each host's active jobs through jobs_active_by_host`, async () => {
    const p = await plan(sql);
    assert.match(p, /Index Scan using jobs_active_by_host on jobs j/, p);
    assert.match(p, /Index Cond: \(host = h\.name\)/, p);
  });
}

test('the rescue sweep reads only the active jobs, never the whole table in id order', async () => {
  const p = await plan(ORPHANED_JOBS, [100]);
  assert.doesNotMatch(p, /jobs_pkey/, p);
  assert.match(p, /(Index|Bitmap Index) Scan (using|on) jobs_active/, p);
});

test("a pass reads its candidates in dispatch order through the queue's indexes, bindings by key", async () => {
  const p = await plan(CANDIDATES, [50]);
  // Those with a command and those without, walked apart (decision 0047, review fixes), and the
  // window of the held ones: one walk each of jobs_queue_command and jobs_queue_bare, which hold
  // one kind each (migration 0048), so neither walk reads past the other kind's jobs, and one of
  // jobs_queue (the one sort is of their at most 3 x limit rows).
  for (const index of ['jobs_queue', 'jobs_queue_command', 'jobs_queue_bare']) {
    assert.equal((p.match(new RegExp(`Index Scan using ${index} on jobs`, 'g')) ?? []).length, 1, p);
  }
  assert.doesNotMatch(p, /Seq Scan/, p);
  for (const table of ['tasks', 'agents', 'projects', 'workspace_locks', 'sessions']) {
    assert.match(p, new RegExp(`Index Scan using ${table}_pkey`), p);
  }
});

/** The InitPlan or SubPlan a plan line runs under, if any: its nearest such ancestor. */
function subplanOf(lines: readonly string[], index: number): string | null {
  const indent = (line: string): number => line.length - line.trimStart().length;
  let threshold = indent(lines[index] ?? '');
  for (let at = index - 1; at >= 0; at--) {
    const line = lines[at] ?? '';
    if (indent(line) >= threshold) continue;
    if (/^\s*(InitPlan|SubPlan)/.test(line)) return line.trim();
    threshold = indent(line);
  }
  return null;
}

// Whether a live host has an agent command (decision 0047) is an uncorrelated subquery: an
// InitPlan, run once per statement through hosts_agent_command, never a SubPlan run per job.
test('a pass asks once whether a live host has an agent command, through hosts_agent_command', async () => {
  const p = await plan(CANDIDATES, [50]);
  const lines = p.split('\n');
  const reads = lines.flatMap((line, index) => (/ on hosts ah\b/.test(line) ? [index] : []));
  assert.ok(reads.length > 0, p);
  for (const index of reads) {
    assert.match(lines[index] ?? '', /Index (Only )?Scan using hosts_agent_command on hosts ah/, p);
    assert.match(subplanOf(lines, index) ?? '', /^InitPlan /, p);
  }
});

// As an anti-join, the planner may compare each queued job with every task that is not open,
// the finished history included (it did, with statistics from a fresh queue).
test("a take looks each queued job's task up by its key, never through an anti-join", async () => {
  await client.query('SET enable_seqscan = on');
  try {
    const p = await plan(takeQueued('500', 'now()'));
    assert.match(p, /Index Scan using jobs_queue on jobs/, p);
    assert.match(p, /SubPlan[\s\S]*Index Scan using tasks_pkey on tasks t/, p);
    assert.doesNotMatch(p, /Anti Join|Seq Scan on tasks/, p);
  } finally {
    await client.query('SET enable_seqscan = off');
  }
});

// The leader's time-limit sweep (decision 0037, "The leader's sweep") reads only the running jobs
// with a limit of their own, through their partial index, never the finished ones: in the plan of
// its first runs and in the generic plan PostgreSQL keeps for the statement after five.
test('the time-limit sweep reads the running jobs with a limit through jobs_running_limited', async () => {
  for (const p of [await plan(DUE_SQL, [100]), await genericPlan(client, DUE_SQL, '100')]) {
    assert.match(p, /Index Scan using jobs_running_limited on jobs/, p);
    assert.doesNotMatch(p, /Seq Scan|jobs_pkey|jobs_finished/, p);
  }
});
