/**
 * The peers, driven from the bench on the same PostgreSQL as Baton, each in its own database:
 *  - Graphile Worker: `run()` with concurrency 8 and its defaults (pool 10, LISTEN/NOTIFY wake-up,
 *    pollInterval 2000 ms, no local queue, no completion batching); jobs added with addJobs.
 *  - pg-boss: 8 `work()` loops on one queue (policy standard), batchSize 50 and the minimum
 *    polling interval (0.5 s); jobs added with insert().
 * The handler is a no-op that counts. The clock starts when the first job reaches a handler and
 * stops when the job table says every job is complete (Graphile deletes a completed job; pg-boss
 * marks it `completed`).
 */
import { Logger, makeWorkerUtils, run, type Runner, type TaskList } from 'graphile-worker';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { nowMs, waitUntil } from './stats.js';
import { readyForDrain, withClient } from './pg-server.js';

export const GRAPHILE_CONCURRENCY = 8;
export const PGBOSS_WORKERS = 8;
export const PGBOSS_BATCH = 50;
export const PGBOSS_POLL_SECONDS = 0.5;

export const silentLogger = new Logger(() => () => undefined);

/** A count of handler calls that resolves once it reaches `n`, remembering when the first came. */
function counter(n: number): { hit: (k?: number) => void; first: () => number; all: Promise<void> } {
  let seen = 0;
  let first = Number.NaN;
  let resolve: () => void = () => undefined;
  const all = new Promise<void>((r) => (resolve = r));
  return {
    hit: (k = 1) => {
      if (seen === 0) first = nowMs();
      seen += k;
      if (seen >= n) resolve();
    },
    first: () => first,
    all,
  };
}

async function zeroCount(client: pg.Client, sql: string, what: string): Promise<void> {
  await waitUntil(what, async () => (await client.query<{ n: number }>(sql)).rows[0]?.n === 0, 2);
}

/**
 * Graphile Worker's own pool (what `connectionString` would make: 10 connections), ended and
 * awaited on stop. Its internal pool is ended without waiting and loses its error listener, so an
 * idle connection that DROP DATABASE … WITH (FORCE) terminates right after would crash the bench.
 */
export async function startGraphile(url: string, taskList: TaskList): Promise<Runner> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const runner = await run({
    pgPool: pool,
    concurrency: GRAPHILE_CONCURRENCY,
    noHandleSignals: true,
    logger: silentLogger,
    taskList,
    crontab: '',
  });
  const stop = runner.stop.bind(runner);
  return Object.assign(runner, {
    stop: async (): Promise<void> => {
      await stop();
      await pool.end();
    },
  });
}

export async function migrateGraphile(url: string): Promise<void> {
  const utils = await makeWorkerUtils({ connectionString: url, logger: silentLogger });
  try {
    await utils.migrate();
  } finally {
    await utils.release();
  }
}

/** Jobs per second for Graphile Worker draining `n` no-op jobs. */
export async function drainGraphile(url: string, n: number): Promise<number> {
  const utils = await makeWorkerUtils({ connectionString: url, logger: silentLogger });
  try {
    await utils.migrate();
    await utils.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: 'noop', payload: { i } })));
  } finally {
    await utils.release();
  }
  return withClient(url, async (monitor) => {
    await readyForDrain(monitor);
    const count = counter(n);
    const runner = await startGraphile(url, { noop: () => Promise.resolve(count.hit()) });
    try {
      await count.all;
      await zeroCount(
        monitor,
        'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',
        'Graphile drain',
      );
      return n / ((nowMs() - count.first()) / 1000);
    } finally {
      await runner.stop();
    }
  });
}

/** Jobs per second for pg-boss draining `n` no-op jobs. */
export async function drainPgBoss(url: string, n: number): Promise<number> {
  const boss = new PgBoss({ connectionString: url, schedule: false });
  boss.on('error', (error: Error) => process.stderr.write(`bench: pg-boss: ${error.message}\n`));
  await boss.start();
  try {
    const queue = 'noop';
    await boss.createQueue(queue);
    await boss.insert(Array.from({ length: n }, (_, i) => ({ name: queue, data: { i } })));
    return await withClient(url, async (monitor) => {
      await readyForDrain(monitor);
      const count = counter(n);
      const options = { batchSize: PGBOSS_BATCH, pollingIntervalSeconds: PGBOSS_POLL_SECONDS };
      for (let w = 0; w < PGBOSS_WORKERS; w++) {
        await boss.work(queue, options, (jobs) => Promise.resolve(count.hit(jobs.length)));
      }
      await count.all;
      const open = `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'noop' AND state <> 'completed'`;
      await zeroCount(monitor, open, 'pg-boss drain');
      return n / ((nowMs() - count.first()) / 1000);
    });
  } finally {
    await boss.stop({ graceful: false, wait: true, timeout: 1000 });
  }
}
