/**
 * The Tasks page stays cheap at 100,000 tasks, shown without timing, as the queue's page is
 * (queue-scale.test.ts): on SQLite by the query plan (a backwards walk of the primary key from the
 * cursor, no sort, and each row's blockers and active job by index), on PostgreSQL by EXPLAIN
 * ANALYZE's row counts (the scan reads about one page of rows, not the table).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { openStore } from '../../src/store/open.js';
import { TASK_PAGE_SQL as PG_PAGE } from '../../src/store/postgres/task-page.js';
import { TASK_PAGE_SQL as SQLITE_PAGE } from '../../src/store/sqlite/task-page.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';

const TASKS = 100_000;
const PAGE = 50;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
/** The nodes that read the page itself: a row's subplans (its few blockers, sorted by key) left out. */
const pageNodes = (n: PlanNode): PlanNode[] => [
  n,
  ...(n.Plans ?? []).filter((child) => child['Parent Relationship'] !== 'SubPlan').flatMap(pageNodes),
];

/** Every third task done, every tenth waiting for the first (open): blocked. */
const SEED = {
  sqlite: [
    `INSERT INTO tasks (key, created_at, state, state_at)
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TASKS})
     SELECT 'bulk-' || i, i, CASE WHEN i % 3 = 0 THEN 'done' ELSE 'open' END, i FROM n`,
    `INSERT INTO task_deps (task_id, depends_on, added_at, added_by)
     SELECT id, 1, 0, 'bulk' FROM tasks WHERE id % 10 = 0`,
    'ANALYZE',
  ],
  postgres: [
    `INSERT INTO tasks (key, created_at, state, state_at)
     SELECT 'bulk-' || i, now(), CASE WHEN i % 3 = 0 THEN 'done' ELSE 'open' END, now()
     FROM generate_series(1, ${TASKS}) i`,
    `INSERT INTO task_deps (task_id, depends_on, added_at, added_by)
     SELECT id, 1, now(), 'bulk' FROM tasks WHERE id % 10 = 0`,
    'ANALYZE tasks',
    'ANALYZE task_deps',
  ],
};

const ACTIVE = ['open', 'in_review', 'escalated'];

for (const db of bothEngines()) {
  describe(`the Tasks page at ${TASKS.toLocaleString('en')} tasks (${db.name})`, () => {
    test('reads one page of rows by keyset, never the whole table, and never sorts it', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const raw = await rawSql(db, url);
      try {
        for (const sql of SEED[db.engine === 'sqlite' ? 'sqlite' : 'postgres']) await raw.exec(sql);
        const views = new Coordinator(store).views;
        const first = await views.tasks({ limit: String(PAGE), state: 'any' });
        assert.deepEqual(first.items[0]?.task.key, `bulk-${TASKS}`);
        const blocked = await views.tasks({ limit: String(PAGE), blocked: '1', before: String(TASKS / 2) });
        assert.equal(blocked.items.length, PAGE);
        assert.ok(
          blocked.items.every((row) => row.task.key.endsWith('0') && row.blockers.join() === 'bulk-1'),
        );
        const cases: [number, string[] | null, boolean][] = [
          [Number.MAX_SAFE_INTEGER, null, false],
          [TASKS / 2, ACTIVE, false],
          [TASKS / 2, ['done'], false],
          [TASKS / 2, null, true],
        ];
        for (const [before, states, onlyBlocked] of cases) {
          const what = `before ${before}, states ${String(states)}, blocked ${onlyBlocked}`;
          if (db.engine === 'sqlite') {
            const plan = await raw.exec(`EXPLAIN QUERY PLAN ${SQLITE_PAGE}`, [
              {
                before,
                states: states === null ? null : JSON.stringify(states),
                project: null,
                label: null,
                blocked: Number(onlyBlocked),
                limit: PAGE,
              },
            ] as unknown[]);
            const text = plan.map((r) => String(r['detail'])).join('\n');
            assert.match(text, /SEARCH tasks USING INTEGER PRIMARY KEY \(rowid<\?\)/, `${what}:\n${text}`);
            assert.doesNotMatch(text, /TEMP B-TREE/, `${what}:\n${text}`);
            // The blockers, the job and the blocked filter probe indexes; only json_each is scanned.
            assert.doesNotMatch(text, /SCAN (?!json_each)/, `${what}:\n${text}`);
          } else {
            const [row] = await raw.exec(`EXPLAIN (ANALYZE, FORMAT JSON) ${PG_PAGE}`, [
              before,
              states,
              null,
              null,
              onlyBlocked,
              PAGE,
            ]);
            const plan = (row?.['QUERY PLAN'] as { Plan: PlanNode }[])[0]?.Plan;
            assert.ok(plan !== undefined);
            const all = nodes(plan);
            const sorts = pageNodes(plan).some((n) => n['Node Type'] === 'Sort');
            assert.ok(!sorts, `${what}: sorts the page\n${JSON.stringify(plan)}`);
            assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan'), `${what}: ${JSON.stringify(plan)}`);
            const scan = all.find((n) => n['Relation Name'] === 'tasks' && n['Index Name'] === 'tasks_pkey');
            assert.equal(scan?.['Scan Direction'], 'Backward', `${what}: ${JSON.stringify(plan)}`);
            // A third of the tasks are done and a tenth blocked: a page of 50 reads about 75 to 500 rows.
            const read =
              ((scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0)) *
              (scan?.['Actual Loops'] ?? 0);
            console.log(`${db.name}, ${what}: the scan read ${read} rows of ${TASKS}`);
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
