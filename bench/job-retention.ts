/**
 * Job retention (docs/decisions/0039-job-retention.md) on a backlog of finished jobs, on SQLite and
 * PostgreSQL side by side in one run: N finished jobs (default 1,000,000) over 1,000 tasks, all
 * ended 40 days ago, seeded with SQL; then the removal at 30 days, batch after batch as the
 * leader's passes do it, in this process, with a 100 ms timer (a heartbeat's) beside it. Reported:
 * rows removed per second, the longest and median batch (each batch is one transaction), the
 * timer's worst lateness while idle and while removing, and a pass that finds nothing left (the
 * newest job of each task is kept, at the head of the index).
 * Run: `npm run build && node dist/bench/job-retention.js [sqlite|postgres]` (BATON_BENCH_JOBS for
 * N, BATON_BENCH_BATCH for the batch, BATON_BENCH_PG_URL for the server, default the local
 * postgres:postgres one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { JOB_PRUNE_BATCH } from '../src/core/job-retention.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { dropDatabase, freshDatabase, withClient } from './pg-server.js';

const JOBS = Number(process.env['BATON_BENCH_JOBS'] ?? 1_000_000);
const TASKS = 1000;
/** Jobs per batch (BATON_BENCH_BATCH), by default the leader's pass's. */
const BATCH = Number(process.env['BATON_BENCH_BATCH'] ?? JOB_PRUNE_BATCH);
const DAY = 86_400_000;
const SERVER = process.env['BATON_BENCH_PG_URL'] ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

/** A 100 ms timer's worst lateness, in ms, until `stop` is called. */
function lagMeter(): { stop(): number } {
  let worst = 0;
  let due = performance.now() + 100;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - due);
    due = now + 100;
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return worst;
    },
  };
}

async function addTasks(store: Store): Promise<void> {
  for (let index = 0; index < TASKS; index++)
    await store.tasks.add({ key: `bench-${index}`, title: 'bench' });
}

function seedSqlite(path: string, now: number): void {
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  const ended = now - 40 * DAY;
  db.prepare(
    `WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ${JOBS - 1})
     INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
     SELECT (SELECT min(id) FROM tasks) + x % ${TASKS}, 'done', 100, ${ended} - 60000, ${ended} + x FROM c`,
  ).run();
  db.close();
}

async function seedPostgres(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(
      `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at, github)
       SELECT (SELECT min(id) FROM tasks) + x % ${TASKS}, 'done', 100,
         now() - interval '40 days' - interval '1 minute', now() - interval '40 days' + x * interval '1 ms', false
       FROM generate_series(0, ${JOBS - 1}) x`,
    );
    await client.query('VACUUM ANALYZE jobs');
  });
}

interface Figures {
  readonly engine: string;
  readonly removed: number;
  readonly seconds: number;
  readonly rowsPerSecond: number;
  readonly batchMaxMs: number;
  readonly batchMedianMs: number;
  readonly idleLagMs: number;
  readonly pruneLagMs: number;
  readonly emptyPassMs: number;
}

async function measure(engine: string, store: Store): Promise<Figures> {
  const idle = lagMeter();
  await sleep(3000);
  const idleLagMs = idle.stop();
  const batches: number[] = [];
  let removed = 0;
  const meter = lagMeter();
  const start = performance.now();
  for (;;) {
    const began = performance.now();
    const result = await store.retention.pruneJobs({ olderThanMs: 30 * DAY, limit: BATCH });
    batches.push(performance.now() - began);
    if (!result.ok) throw new Error('fenced without a term');
    removed += result.removed;
    if (result.removed < BATCH) break;
    await new Promise((resolve) => setImmediate(resolve)); // as the leader's pass does between batches
  }
  const seconds = (performance.now() - start) / 1000;
  const pruneLagMs = meter.stop();
  const began = performance.now();
  await store.retention.pruneJobs({ olderThanMs: 30 * DAY, limit: BATCH });
  const emptyPassMs = performance.now() - began;
  const sorted = [...batches].sort((left, right) => left - right);
  return {
    engine,
    removed,
    seconds,
    rowsPerSecond: removed / seconds,
    batchMaxMs: sorted.at(-1) ?? 0,
    batchMedianMs: sorted[Math.floor(sorted.length / 2)] ?? 0,
    idleLagMs,
    pruneLagMs,
    emptyPassMs,
  };
}

async function onSqlite(): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-retention-'));
  const path = join(dir, 'baton.db');
  try {
    const store = await openStore(path, { intent: 'create' });
    await addTasks(store);
    seedSqlite(path, await store.now());
    try {
      return await measure('sqlite', store);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres(): Promise<Figures> {
  const url = await freshDatabase(SERVER, 'retention');
  try {
    const store = await openStore(url, { intent: 'create' });
    try {
      await addTasks(store);
      await seedPostgres(url);
      return await measure('postgres', store);
    } finally {
      await store.close();
    }
  } finally {
    await dropDatabase(SERVER, url);
  }
}

const rows: Figures[] = [];
const only = process.argv[2]; // sqlite or postgres: that engine alone
for (const run of [onSqlite, onPostgres].filter(
  (_, index) => only === undefined || only === ['sqlite', 'postgres'][index],
)) {
  rows.push(await run());
  console.log(JSON.stringify(rows.at(-1)));
}
const fixed = (value: number, digits = 0): string => value.toFixed(digits);
console.log(`\n${JOBS} finished jobs, batches of ${BATCH}`);
console.log(
  '| engine | removed | s | rows/s | longest batch ms | median batch ms | timer lag idle ms | timer lag pruning ms | empty pass ms |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.engine} | ${row.removed} | ${fixed(row.seconds, 1)} | ${fixed(row.rowsPerSecond)} | ${fixed(row.batchMaxMs)} | ` +
      `${fixed(row.batchMedianMs)} | ${fixed(row.idleLagMs)} | ${fixed(row.pruneLagMs)} | ${fixed(row.emptyPassMs, 1)} |`,
  );
}
