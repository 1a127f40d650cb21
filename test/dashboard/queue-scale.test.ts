/**
 * The queue view's pages stay cheap at 100,000 jobs, shown without timing: on SQLite by the
 * query plan (a backwards walk of the primary key from the cursor, no sort), on PostgreSQL by
 * EXPLAIN ANALYZE's row counts (the scan reads one page of rows, not the table).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import type { JobState } from '../../src/core/job.js';
import { openStore } from '../../src/store/open.js';
import { JOB_PAGE_SQL as PG_PAGE } from '../../src/store/postgres/observe.js';
import { JOB_PAGE_SQL as SQLITE_PAGE, jobPageSql } from '../../src/store/sqlite/observe.js';
import { allJobsSql as sqliteList } from '../../src/store/sqlite/job-list.js';
import { allJobsSql as pgList } from '../../src/store/postgres/job-list.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';

const JOBS = 100_000;
const PAGE = 50;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/**
 * Live states only (the Hosts view, doctor, Workspaces): SQLite reads their partial indexes, not a
 * walk back through every finished job when fewer than a page match (PostgreSQL's plan does so).
 * Planned without statistics, as Baton's own databases are (it runs no ANALYZE on SQLite).
 */
async function assertLivePagesUsePartialIndexes(raw: Awaited<ReturnType<typeof rawSql>>): Promise<void> {
  const live: JobState[][] = [['queued'], ['claimed', 'running'], ['queued', 'claimed', 'running']];
  for (const statuses of live) {
    const plan = await raw.exec(`EXPLAIN QUERY PLAN ${jobPageSql(statuses)}`, [
      {
        before: Number.MAX_SAFE_INTEGER,
        statuses: JSON.stringify(statuses),
        host: 'box-3',
        key: null,
        limit: PAGE,
      },
    ] as unknown[]);
    const text = plan.map((r) => String(r['detail'])).join('\n');
    assert.match(
      text,
      /SCAN jobs USING COVERING INDEX jobs_(queue|active_by_host)/,
      `${String(statuses)}:\n${text}`,
    );
    assert.doesNotMatch(text, /rowid<\?|SCAN j\b/, `${String(statuses)}:\n${text}`);
  }
}

/**
 * jobs.list (`baton queue list`) at this scale: each part is read by its index and stops at the
 * limit, and only the merged parts are sorted (store/job-list.ts). On SQLite by the plan (the live
 * parts name their partial indexes, the finished one never sorts); on PostgreSQL by the rows read.
 */
async function assertJobListReadsByIndex(
  engine: 'sqlite' | 'postgres',
  raw: Awaited<ReturnType<typeof rawSql>>,
): Promise<void> {
  const filters: (JobState[] | undefined)[] = [undefined, ['queued'], ['done'], ['running', 'failed']];
  for (const status of filters) {
    const what = `jobs.list status ${String(status)}`;
    if (engine === 'sqlite') {
      const params = { statuses: status === undefined ? null : JSON.stringify(status), limit: 1000 };
      const plan = await raw.exec(`EXPLAIN QUERY PLAN ${sqliteList({ status })}`, [params] as unknown[]);
      const text = plan.map((r) => String(r['detail'])).join('\n');
      // Each part's plan, up to where the merge reads it: the finished part (a plain scan of jobs, by
      // rowid backwards) stops at the limit and never sorts; the live parts read their partial indexes.
      const parts = text.split('CO-ROUTINE (subquery').map((part) => part.split('SCAN (subquery')[0] ?? '');
      const finished = parts.filter((part) => /^SCAN jobs$/m.test(part));
      assert.equal(
        finished.length,
        status === undefined || status.some((s) => s === 'done' || s === 'failed') ? 1 : 0,
      );
      for (const part of finished)
        assert.doesNotMatch(part, /TEMP B-TREE/, `${what}: the finished part sorts\n${text}`);
      if (status === undefined) assert.match(text, /jobs_active[\s\S]*jobs_queue/, `${what}:\n${text}`);
    } else {
      const [row] = await raw.exec(`EXPLAIN (ANALYZE, FORMAT JSON) ${pgList({ status })}`, [
        status ?? null,
        1000,
      ]);
      const plan = (row?.['QUERY PLAN'] as { Plan: PlanNode }[])[0]?.Plan;
      assert.ok(plan !== undefined);
      const read = nodes(plan)
        .filter((n) => n['Relation Name'] === 'jobs')
        .reduce(
          (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
          0,
        );
      console.log(`postgres, ${what}: read ${read} rows of ${JOBS}`);
      assert.ok(read <= 5_000, `${what}: read ${read} rows\n${JSON.stringify(plan)}`);
    }
  }
}

/**
 * `queue list --before ID` (the next page of the finished jobs): the primary key walked back from
 * the id, cut at the limit, never a walk of the table nor a sort of it. SQLite by the plan (a
 * search of the rowid below the id), PostgreSQL by the rows read.
 */
async function assertBeforeReadsByIndex(
  engine: 'sqlite' | 'postgres',
  raw: Awaited<ReturnType<typeof rawSql>>,
): Promise<void> {
  const before = JOBS / 2;
  for (const status of [undefined, ['done'], ['failed', 'queued']] as (JobState[] | undefined)[]) {
    const what = `jobs.list before ${before}, status ${String(status)}`;
    if (engine === 'sqlite') {
      const params = { statuses: status === undefined ? null : JSON.stringify(status), limit: 1000, before };
      const plan = await raw.exec(`EXPLAIN QUERY PLAN ${sqliteList({ status, before })}`, [
        params,
      ] as unknown[]);
      const text = plan.map((r) => String(r['detail'])).join('\n');
      assert.match(text, /SEARCH jobs USING INTEGER PRIMARY KEY \(rowid<\?\)/, `${what}:\n${text}`);
      assert.doesNotMatch(text, /SCAN jobs|jobs_queue|jobs_active/, `${what}: another part\n${text}`);
      assert.equal(text.match(/TEMP B-TREE/g)?.length ?? 0, 1, `${what}: one sort, of the page\n${text}`);
    } else {
      const sql = `EXPLAIN (ANALYZE, FORMAT JSON) ${pgList({ status, before })}`;
      const [row] = await raw.exec(sql, [status ?? null, 1000, before]);
      const plan = (row?.['QUERY PLAN'] as { Plan: PlanNode }[])[0]?.Plan;
      assert.ok(plan !== undefined);
      const scans = nodes(plan).filter((n) => n['Relation Name'] === 'jobs');
      assert.deepEqual(
        scans.map((n) => [n['Index Name'], n['Scan Direction']]),
        [['jobs_pkey', 'Backward']],
        `${what}: ${JSON.stringify(plan)}`,
      );
      const read = scans.reduce(
        (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
        0,
      );
      console.log(`postgres, ${what}: read ${read} rows of ${JOBS}`);
      assert.ok(read <= 5_000, `${what}: read ${read} rows\n${JSON.stringify(plan)}`);
    }
  }
}

/**
 * `queue list --status oom_killed` (the rare finished states, decision 0041): read through their
 * partial index (`jobs_rare_finishes`, migration 0039), newest first, never a walk of the finished
 * jobs. A tenth of a percent of the jobs here are oom_killed.
 */
async function assertRareReadsByIndex(
  engine: 'sqlite' | 'postgres',
  raw: Awaited<ReturnType<typeof rawSql>>,
): Promise<void> {
  const cases: [JobState[], number | undefined][] = [
    [['oom_killed'], undefined],
    [['oom_killed', 'escalated', 'queued'], undefined],
    [['oom_killed'], JOBS / 2],
  ];
  for (const [status, before] of cases) {
    const what = `jobs.list status ${String(status)}, before ${String(before)}`;
    if (engine === 'sqlite') {
      const params = {
        statuses: JSON.stringify(status),
        limit: 1000,
        ...(before === undefined ? {} : { before }),
      };
      const plan = await raw.exec(`EXPLAIN QUERY PLAN ${sqliteList({ status, before })}`, [
        params,
      ] as unknown[]);
      const text = plan.map((r) => String(r['detail'])).join('\n');
      assert.match(text, /jobs USING (COVERING )?INDEX jobs_rare_finishes/, `${what}:\n${text}`);
      assert.doesNotMatch(text, /^SCAN jobs$/m, `${what}: a walk of the table\n${text}`);
    } else {
      const values = before === undefined ? [status, 1000] : [status, 1000, before];
      const [row] = await raw.exec(`EXPLAIN (ANALYZE, FORMAT JSON) ${pgList({ status, before })}`, values);
      const plan = (row?.['QUERY PLAN'] as { Plan: PlanNode }[])[0]?.Plan;
      assert.ok(plan !== undefined);
      const scans = nodes(plan).filter((n) => n['Relation Name'] === 'jobs');
      const read = scans.reduce(
        (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
        0,
      );
      console.log(`postgres, ${what}: read ${read} rows of ${JOBS}`);
      assert.ok(read <= 1_000, `${what}: read ${read} rows\n${JSON.stringify(plan)}`);
    }
  }
}

for (const db of bothEngines()) {
  describe(`the queue page at ${JOBS.toLocaleString('en')} jobs (${db.name})`, () => {
    test('reads one page of rows by keyset, never the whole table, and never sorts it', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const raw = await rawSql(db, url);
      try {
        const task = await store.tasks.add({ key: 'bulk' });
        const taskId = (
          await raw.exec(
            db.engine === 'sqlite'
              ? 'SELECT id FROM tasks WHERE key = ?'
              : 'SELECT id FROM tasks WHERE key = $1',
            ['bulk'],
          )
        )[0]?.['id'];
        assert.ok(taskId !== undefined, task.key);
        if (db.engine === 'sqlite') {
          await raw.exec(
            `INSERT INTO jobs (task_id, status, priority, queued_at, host)
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${JOBS})
             SELECT ?, CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'done' END, 100, i, 'box-' || (i % 10) FROM n`,
            [taskId],
          );
          await raw.exec("UPDATE jobs SET status = 'oom_killed' WHERE id % 997 = 0 AND status = 'done'");
          await assertLivePagesUsePartialIndexes(raw);
          await assertJobListReadsByIndex(db.engine, raw);
          await assertBeforeReadsByIndex(db.engine, raw);
          await assertRareReadsByIndex(db.engine, raw);
          await raw.exec('ANALYZE');
        } else {
          await raw.exec(
            `INSERT INTO jobs (task_id, status, priority, queued_at, host, github)
             SELECT $1, CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'done' END, 100, now(), 'box-' || (i % 10), false
             FROM generate_series(1, ${JOBS}) i`,
            [taskId],
          );
          await raw.exec("UPDATE jobs SET status = 'oom_killed' WHERE id % 997 = 0 AND status = 'done'");
          await raw.exec('ANALYZE jobs');
        }
        if (db.engine === 'postgres') {
          await assertJobListReadsByIndex(db.engine, raw);
          await assertBeforeReadsByIndex(db.engine, raw);
          await assertRareReadsByIndex(db.engine, raw);
        }
        const views = new Coordinator(store).views;
        const first = await views.queue({ limit: String(PAGE) });
        assert.equal(first.items.length, PAGE);
        const middle = await views.queue({ limit: String(PAGE), before: String(JOBS / 2) });
        assert.deepEqual(
          middle.items.map((j) => j.id),
          Array.from({ length: PAGE }, (_, i) => JOBS / 2 - 1 - i),
        );
        const cases: [number, string[] | null, string | null][] = [
          [Number.MAX_SAFE_INTEGER, null, null],
          [JOBS / 2, null, null],
          [JOBS / 2, ['failed'], null],
          [JOBS / 2, null, 'box-3'],
        ];
        for (const [before, statuses, host] of cases) {
          const what = `before ${before}, status ${String(statuses)}, host ${String(host)}`;
          if (db.engine === 'sqlite') {
            const plan = await raw.exec(`EXPLAIN QUERY PLAN ${SQLITE_PAGE}`, [
              {
                before,
                statuses: statuses === null ? null : JSON.stringify(statuses),
                host,
                key: null,
                limit: PAGE,
              },
            ] as unknown[]);
            const text = plan.map((r) => String(r['detail'])).join('\n');
            assert.match(text, /SEARCH j USING INTEGER PRIMARY KEY \(rowid<\?\)/, `${what}:\n${text}`);
            assert.doesNotMatch(text, /TEMP B-TREE/, `${what}:\n${text}`);
          } else {
            const [row] = await raw.exec(`EXPLAIN (ANALYZE, FORMAT JSON) ${PG_PAGE}`, [
              before,
              statuses,
              host,
              null,
              PAGE,
            ]);
            const plan = (row?.['QUERY PLAN'] as { Plan: PlanNode }[])[0]?.Plan;
            assert.ok(plan !== undefined);
            const all = nodes(plan);
            assert.ok(!all.some((n) => n['Node Type'] === 'Sort'), `${what}: sorts\n${JSON.stringify(plan)}`);
            const scan = all.find((n) => n['Relation Name'] === 'jobs');
            assert.equal(scan?.['Node Type'], 'Index Scan', `${what}: ${JSON.stringify(scan)}`);
            assert.equal(scan?.['Index Name'], 'jobs_pkey');
            assert.equal(scan?.['Scan Direction'], 'Backward');
            // A third of the rows are failed and a tenth are on each host: a page of 50 reads
            // about 150 and 500 rows of the 100,000.
            const read =
              ((scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0)) *
              (scan?.['Actual Loops'] ?? 0);
            console.log(`${db.name}, ${what}: the scan read ${read} rows of ${JOBS}`);
            assert.ok(read <= PAGE * 20, `${what}: read ${read} rows`);
          }
        }
      } finally {
        await raw.close();
        await store.close();
      }
    });
  });
}
