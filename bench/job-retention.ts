/**
 * Job retention (docs/decisions/0039-job-retention.md) on a backlog of finished jobs, on SQLite and
 * PostgreSQL side by side in one run: N finished jobs (default 1,000,000) over 1,000 tasks, all
 * ended 40 days ago, seeded with SQL; then the removal at 30 days, batch after batch as the
 * leader's passes do it, in this process, with a 100 ms timer (a heartbeat's) beside it. Reported:
 * rows removed per second, the longest and median batch (each batch is one transaction), the
 * timer's worst lateness while idle and while removing, and a pass that finds nothing left (the
 * newest job of each task is kept, at the head of the index).
 * BATON_BENCH_KEPT adds that many tasks with one old job each (kept: each the newest of its task);
 * each engine runs without and with the cursor a pass carries between batches, side by side.
 * Run: `npm run build && node dist/bench/job-retention.js [sqlite|postgres]` (BATON_BENCH_JOBS for
 * N, BATON_BENCH_BATCH for the batch, BATON_BENCH_KEPT, BATON_BENCH_CURSOR 0 or 1 for one mode only,
 * BATON_BENCH_PG_URL for the server, default the local postgres:postgres one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { JOB_PRUNE_BATCH } from '../src/core/job-retention.js';
import { openStore } from '../src/store/open.js';
import type { JobPruneCursor } from '../src/store/retention-store.js';
import type { Store } from '../src/store/store.js';
import { dropDatabase, freshDatabase, withClient } from './pg-server.js';

const JOBS = Number(process.env['BATON_BENCH_JOBS'] ?? 1_000_000);
const TASKS = 1000;
/**
 * BATON_BENCH_KEPT: that many more tasks, each with one job that ended 50 days ago: the newest of
 * its task, so kept, at the head of `jobs_finished` where every batch without a cursor walks it.
 */
const KEPT = Number(process.env['BATON_BENCH_KEPT'] ?? 0);
/** Jobs per batch (BATON_BENCH_BATCH), by default the leader's pass's. */
const BATCH = Number(process.env['BATON_BENCH_BATCH'] ?? JOB_PRUNE_BATCH);
const DAY = 86_400_000;
/**
 * Whether each batch starts after the previous one's last job, as a pass does since 0039's cursor:
 * BATON_BENCH_CURSOR=1 with it, 0 without (each batch from the head of the index, as before);
 * left out, both, side by side in this run (each on a fresh database).
 */
const CURSORS = { '0': [false], '1': [true] }[process.env['BATON_BENCH_CURSOR'] ?? ''] ?? [false, true];
/**
 * BATON_BENCH_TOKENS=1: each job also gets a revoked run token, as every run of `baton up` with an
 * API leaves one, so the batch's token reads and deletes meet a table as large as the jobs'.
 */
const TOKENS = process.env['BATON_BENCH_TOKENS'] === '1';
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
  if (KEPT > 0) {
    const kept = `WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ${KEPT - 1})`;
    db.prepare(
      `${kept} INSERT INTO tasks (key, title, created_at) SELECT 'kept-' || x, 'bench', ${now} FROM c`,
    ).run();
    db.prepare(
      `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
       SELECT id, 'done', 100, ${now - 50 * DAY} - 60000, ${now - 50 * DAY} + id FROM tasks WHERE key LIKE 'kept-%'`,
    ).run();
  }
  db.prepare(
    `WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ${JOBS - 1})
     INSERT INTO jobs (task_id, status, priority, queued_at, finished_at)
     SELECT (SELECT min(id) FROM tasks) + x % ${TASKS}, 'done', 100, ${ended} - 60000, ${ended} + x FROM c`,
  ).run();
  if (TOKENS) {
    db.prepare(
      `INSERT INTO sessions (kind, host, pid, started_at, heartbeat_at) VALUES ('agent', 'h', 1, ${now}, ${now})`,
    ).run();
    db.prepare(
      `INSERT INTO tokens (id, hash, scope, session_id, created_at, revoked_at, job_id, job_epoch, claim_epoch)
       SELECT 'tok-' || id, 'hash-' || id, 'agent', (SELECT max(id) FROM sessions), ${ended}, ${ended}, id, 1, 1
       FROM jobs`,
    ).run();
  }
  db.close();
}

async function seedPostgres(url: string): Promise<void> {
  await withClient(url, async (client) => {
    if (KEPT > 0) {
      await client.query(
        `INSERT INTO tasks (key, title, created_at) SELECT 'kept-' || x, 'bench', now()
         FROM generate_series(0, ${KEPT - 1}) x`,
      );
      await client.query(
        `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at, github)
         SELECT id, 'done', 100, now() - interval '50 days' - interval '1 minute',
           now() - interval '50 days' + id * interval '1 ms', false FROM tasks WHERE key LIKE 'kept-%'`,
      );
    }
    await client.query(
      `INSERT INTO jobs (task_id, status, priority, queued_at, finished_at, github)
       SELECT (SELECT min(id) FROM tasks) + x % ${TASKS}, 'done', 100,
         now() - interval '40 days' - interval '1 minute', now() - interval '40 days' + x * interval '1 ms', false
       FROM generate_series(0, ${JOBS - 1}) x`,
    );
    if (TOKENS) {
      await client.query(
        `INSERT INTO sessions (kind, host, pid, started_at, heartbeat_at) VALUES ('agent', 'h', 1, now(), now())`,
      );
      await client.query(
        `INSERT INTO tokens (id, hash, scope, session_id, created_at, revoked_at, job_id, job_epoch, claim_epoch)
         SELECT 'tok-' || id, 'hash-' || id, 'agent', (SELECT max(id) FROM sessions), now(), now(), id, 1, 1
         FROM jobs`,
      );
      await client.query('VACUUM ANALYZE tokens');
    }
    await client.query('VACUUM ANALYZE jobs');
  });
}

interface Figures {
  readonly engine: string;
  readonly cursor: boolean;
  readonly removed: number;
  readonly seconds: number;
  readonly rowsPerSecond: number;
  readonly batchMaxMs: number;
  readonly batchFirstMs: number;
  readonly batchMedianMs: number;
  readonly idleLagMs: number;
  readonly pruneLagMs: number;
  readonly emptyPassMs: number;
}

/**
 * One batch: with the cursor, as a pass does since 0039's third pass (after the previous batch's
 * position, at most the default number of index entries looked at); without, as before it (from
 * the head, no bound on what it looks at).
 */
function batchOf(store: Store, cursor: boolean, after: JobPruneCursor | undefined) {
  const base = { olderThanMs: 30 * DAY, limit: BATCH };
  return store.retention.pruneJobs(cursor ? { ...base, after } : { ...base, scan: Number.MAX_SAFE_INTEGER });
}

/** A sweep with nothing left to remove: its whole time, batch after batch (one without the cursor). */
async function emptySweepMs(store: Store, cursor: boolean): Promise<number> {
  const began = performance.now();
  let after: JobPruneCursor | undefined;
  do {
    const result = await batchOf(store, cursor, after);
    after = result.ok && cursor ? (result.last ?? undefined) : undefined;
  } while (after !== undefined);
  return performance.now() - began;
}

async function measure(engine: string, cursor: boolean, store: Store): Promise<Figures> {
  const idle = lagMeter();
  await sleep(3000);
  const idleLagMs = idle.stop();
  const batches: number[] = [];
  let removed = 0;
  const meter = lagMeter();
  const start = performance.now();
  let after: JobPruneCursor | undefined;
  for (;;) {
    const began = performance.now();
    const result = await batchOf(store, cursor, after);
    batches.push(performance.now() - began);
    if (!result.ok) throw new Error('fenced without a term');
    removed += result.removed;
    after = result.last ?? undefined;
    if (cursor ? after === undefined : result.removed < BATCH) break;
    await new Promise((resolve) => setImmediate(resolve)); // as the leader's pass does between batches
  }
  const seconds = (performance.now() - start) / 1000;
  const pruneLagMs = meter.stop();
  const emptyPassMs = await emptySweepMs(store, cursor);
  const sorted = [...batches].sort((left, right) => left - right);
  return {
    engine,
    cursor,
    removed,
    seconds,
    rowsPerSecond: removed / seconds,
    batchMaxMs: sorted.at(-1) ?? 0,
    batchFirstMs: batches[0] ?? 0,
    batchMedianMs: sorted[Math.floor(sorted.length / 2)] ?? 0,
    idleLagMs,
    pruneLagMs,
    emptyPassMs,
  };
}

async function onSqlite(cursor: boolean): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-retention-'));
  const path = join(dir, 'baton.db');
  try {
    const store = await openStore(path, { intent: 'create' });
    await addTasks(store);
    seedSqlite(path, await store.now());
    try {
      return await measure('sqlite', cursor, store);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres(cursor: boolean): Promise<Figures> {
  const url = await freshDatabase(SERVER, 'retention');
  try {
    const store = await openStore(url, { intent: 'create' });
    try {
      await addTasks(store);
      await seedPostgres(url);
      return await measure('postgres', cursor, store);
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
  for (const cursor of CURSORS) {
    rows.push(await run(cursor));
    console.log(JSON.stringify(rows.at(-1)));
  }
}
const fixed = (value: number, digits = 0): string => value.toFixed(digits);
console.log(`\n${JOBS} finished jobs, ${KEPT} more tasks with one kept job each, batches of ${BATCH}`);
console.log(
  '| engine | cursor | removed | s | rows/s | first batch ms | longest batch ms | median batch ms | ' +
    'timer lag idle ms | timer lag pruning ms | empty pass ms |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.engine} | ${row.cursor ? 'yes' : 'no'} | ${row.removed} | ${fixed(row.seconds, 1)} | ` +
      `${fixed(row.rowsPerSecond)} | ${fixed(row.batchFirstMs)} | ${fixed(row.batchMaxMs)} | ` +
      `${fixed(row.batchMedianMs)} | ${fixed(row.idleLagMs)} | ${fixed(row.pruneLagMs)} | ` +
      `${fixed(row.emptyPassMs, 1)} |`,
  );
}
