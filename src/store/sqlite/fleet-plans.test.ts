/**
 * The plans of the queries a dispatcher tick runs against the whole fleet, not their speed: each
 * must reach the active jobs through a partial index, so that its cost grows with the fleet and
 * never with the finished history (issue 22).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { migratedReadOnly, planSteps } from '../../../test/support/sqlite-plans.js';
import { ORPHANED_JOBS } from './dispatch.js';
import { BARE, CANDIDATES, HELD } from './dispatch-pass.js';
import { HOST_FLEET, HOST_LIST } from './hosts.js';
import { DUE_JOBS } from './time-limit-sweep.js';

let db: Database.Database;

before(async () => {
  db = await migratedReadOnly();
});

after(() => db.close());

/** The plan's steps that read the jobs table (aliased j). */
function onJobs(sql: string, ...params: unknown[]): { steps: string[]; all: string } {
  const steps = planSteps(db, sql, ...params);
  return { steps: steps.filter((d) => / j\b/.test(d)), all: steps.join('\n') };
}

// A subquery whose predicate does not imply the partial index's scans the whole jobs table,
// finished history included, once per host.
// The index covers the subqueries' columns (migration 0016): no read of the table, whose pages
// hold the finished history.
// One join grouped by host, not three correlated subqueries: one lookup per host.
for (const [name, sql] of [
  ['hosts.list', HOST_LIST],
  ['hosts.fleet', HOST_FLEET],
] as const) {
  test(`${name} reads each host's active jobs from jobs_active_by_host alone, once, never by a scan`, () => {
    const { steps, all } = onJobs(sql);
    assert.equal(steps.length, 1, all);
    assert.match(steps[0] ?? '', /^SEARCH j USING COVERING INDEX jobs_active_by_host \(host=\?/, all);
  });
}

test('the rescue sweep reads only the active jobs, never the whole table in id order', () => {
  const { steps, all } = onJobs(ORPHANED_JOBS, { now: 0, limit: 100 });
  assert.equal(steps.length, 1, all);
  assert.match(steps[0] ?? '', /^SCAN j USING INDEX jobs_active$/, all);
});

/**
 * Whether a live host has an agent command (decision 0047) is one uncorrelated subquery, run once
 * per statement, that walks only the hosts of hosts_agent_command: the one scan a pass may make
 * besides its walk of the queue. Each step reading it is under a SCALAR SUBQUERY, never a
 * CORRELATED one (run per job).
 */
const AGENT_COMMAND_SCAN = 'SCAN ah USING INDEX hosts_agent_command';

function assertAgentCommandOnce(sql: string): void {
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0, 50) as {
    id: number;
    parent: number;
    detail: string;
  }[];
  const all = rows.map((row) => row.detail).join('\n');
  const scans = rows.filter((row) => / ah\b/.test(row.detail) && row.detail.startsWith('SCAN'));
  assert.ok(scans.length > 0, all);
  for (const scan of scans) {
    assert.equal(scan.detail, AGENT_COMMAND_SCAN, all);
    const parent = rows.find((row) => row.id === scan.parent);
    assert.match(parent?.detail ?? '', /^SCALAR SUBQUERY \d+$/, all);
  }
}

// The candidates with a command and those without (BARE), walked apart (decision 0047, review fixes).
// Each kind walks an index of its own kind only (migration 0048): never past the other kind's jobs.
for (const [name, sql, index] of [
  ['with a command', CANDIDATES, 'jobs_queue_command'],
  ['without a command', BARE, 'jobs_queue_bare'],
] as const) {
  test(`a pass reads its candidates ${name} in dispatch order through ${index}, and their bindings by key`, () => {
    const steps = planSteps(db, sql, 0, 50);
    const all = steps.join('\n');
    const walk = steps.findIndex((d) => / j\b/.test(d));
    assert.equal(steps[walk], `SCAN j USING INDEX ${index}`, all);
    assert.doesNotMatch(all, /TEMP B-TREE/, all);
    const others = steps.filter(
      (x, at) => at !== walk && /^(SCAN|SEARCH)/.test(x) && x !== AGENT_COMMAND_SCAN,
    );
    for (const d of others) assert.match(d, /^SEARCH /, all);
  });
}

test('a pass asks once whether a live host has an agent command, through hosts_agent_command', () => {
  assertAgentCommandOnce(CANDIDATES);
  assertAgentCommandOnce(BARE);
  assertAgentCommandOnce(HELD);
});

// The held jobs are read from a window of the queue's head, walked as the candidates are: the only
// other scan is of that window's (at most `limit`) rows.
test("a pass reads the held jobs of the queue's head through jobs_queue, and each one's bindings by key", () => {
  const steps = planSteps(db, HELD, 0, 50);
  const all = steps.join('\n');
  assert.deepEqual(
    steps.slice(0, 4),
    [
      'CO-ROUTINE j',
      'SCAN jw USING INDEX jobs_queue',
      'SEARCH tw USING INTEGER PRIMARY KEY (rowid=?)',
      'SCAN j',
    ],
    all,
  );
  assert.doesNotMatch(all, /TEMP B-TREE/, all);
  for (const d of steps.slice(4).filter((x) => /^(SCAN|SEARCH)/.test(x) && x !== AGENT_COMMAND_SCAN))
    assert.match(d, /^SEARCH /, all);
});

// The leader's time-limit sweep (decision 0037, "The leader's sweep") reads only the running jobs
// with a limit of their own, through their partial index in start order, never the finished ones.
test('the time-limit sweep reads the running jobs with a limit through jobs_running_limited', () => {
  const { steps, all } = onJobs(DUE_JOBS, 0, 0, 100);
  assert.deepEqual(steps, ['SCAN j USING INDEX jobs_running_limited'], all);
  assert.match(all, /SEARCH s USING INTEGER PRIMARY KEY \(rowid=\?\)/, all);
  assert.doesNotMatch(all, /USE TEMP B-TREE/, all);
});
