/**
 * The peers, driven from the bench on the same PostgreSQL as Baton, each in its own database, in
 * several named configurations (PEERS), so that Baton is compared with each at its best too:
 *  - Graphile Worker: `run()` with concurrency 8 and its own pool; jobs added with addJobs. Its
 *    defaults (no local queue, no completion batching); its documented starting point for
 *    batching (`preset.worker.localQueue.size` = concurrency + 1); and its best batching
 *    configuration on this machine (a large local queue, completions and failures batched with
 *    no delay: the settings of its own performance page, docs/benchmarks.md has the search).
 *  - pg-boss: 8 `work()` loops on one queue (policy standard) at the minimum polling interval
 *    (0.5 s), at batchSize 50 and at a large batch; jobs added with insert().
 * The handler is a no-op that counts. The clock starts when the first job reaches a handler and
 * stops when the job table says every job is complete (Graphile deletes a completed job; pg-boss
 * marks it `completed`).
 */
import { Logger, makeWorkerUtils, run, type Runner, type TaskList } from 'graphile-worker';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { nowMs, waitUntil } from './stats.js';
import { readyForDrain, withClient } from './pg-server.js';

export interface GraphileSetup {
  readonly system: 'graphile';
  /** The figure's name in the JSON (`throughputRuns.<name>`) and the report. */
  readonly name: string;
  readonly concurrency: number;
  /** Connections in its pool (Graphile's own default is 10). */
  readonly poolSize: number;
  /** `preset.worker.localQueue.size`; null leaves it off (Graphile's default, -1). */
  readonly localQueueSize: number | null;
  /** `preset.worker.completeJobBatchDelay` and `failJobBatchDelay`; null leaves them off (-1). */
  readonly batchDelayMs: number | null;
}

export interface PgBossSetup {
  readonly system: 'pgboss';
  readonly name: string;
  readonly workers: number;
  readonly batchSize: number;
  readonly pollSeconds: number;
}

export type PeerSetup = GraphileSetup | PgBossSetup;

export const GRAPHILE_CONCURRENCY = 8;

export const GRAPHILE_DEFAULTS: GraphileSetup = {
  system: 'graphile',
  name: 'graphile',
  concurrency: GRAPHILE_CONCURRENCY,
  poolSize: 10,
  localQueueSize: null,
  batchDelayMs: null,
};

/** Graphile's documented starting point: "A good starting point is often `concurrentJobs + 1`". */
export const GRAPHILE_START: GraphileSetup = {
  ...GRAPHILE_DEFAULTS,
  name: 'graphileLocalQueue',
  localQueueSize: GRAPHILE_CONCURRENCY + 1,
};

/**
 * Graphile's fastest configuration found on this machine (docs/benchmarks.md, "Peer
 * configurations"): its performance page's batching settings (localQueue 500, completions and
 * failures batched with delay 0) at the bench's concurrency.
 */
export const GRAPHILE_BEST: GraphileSetup = {
  ...GRAPHILE_DEFAULTS,
  name: 'graphileBatched',
  localQueueSize: 1000,
  batchDelayMs: 0,
};

export const PGBOSS_DEFAULT: PgBossSetup = {
  system: 'pgboss',
  name: 'pgBoss',
  workers: 8,
  batchSize: 50,
  pollSeconds: 0.5,
};

export const PGBOSS_LARGE: PgBossSetup = { ...PGBOSS_DEFAULT, name: 'pgBossBatched', batchSize: 1000 };

/** Every peer configuration the throughput measure drains, in the order it runs them. */
export const PEERS: readonly PeerSetup[] = [
  GRAPHILE_DEFAULTS,
  GRAPHILE_START,
  GRAPHILE_BEST,
  PGBOSS_DEFAULT,
  PGBOSS_LARGE,
];

/** The settings of a configuration, as the report prints them. */
export function describePeer(peer: PeerSetup): string {
  if (peer.system === 'pgboss') {
    return `pg-boss: ${peer.workers} work() loops, batchSize ${peer.batchSize}, pollingIntervalSeconds ${peer.pollSeconds}`;
  }
  const queue = peer.localQueueSize === null ? 'no local queue' : `localQueue.size ${peer.localQueueSize}`;
  const batch =
    peer.batchDelayMs === null
      ? 'no completion batching'
      : `completeJobBatchDelay ${peer.batchDelayMs}, failJobBatchDelay ${peer.batchDelayMs}`;
  return `Graphile Worker: concurrency ${peer.concurrency}, pool ${peer.poolSize}, ${queue}, ${batch}`;
}

export const silentLogger = new Logger(() => () => undefined);

/** A count of handler calls that resolves once it reaches `target`, remembering when the first came. */
function counter(target: number): { hit: (calls?: number) => void; first: () => number; all: Promise<void> } {
  let seen = 0;
  let first = Number.NaN;
  let resolve: () => void = () => undefined;
  const all = new Promise<void>((settle) => (resolve = settle));
  return {
    hit: (calls = 1) => {
      if (seen === 0) first = nowMs();
      seen += calls;
      if (seen >= target) resolve();
    },
    first: () => first,
    all,
  };
}

async function zeroCount(client: pg.Client, sql: string, what: string): Promise<void> {
  await waitUntil(what, async () => (await client.query<{ n: number }>(sql)).rows[0]?.n === 0, 2);
}

/**
 * Graphile Worker with its own pool (what `connectionString` would make), ended and awaited on
 * stop. Its internal pool is ended without waiting and loses its error listener, so an idle
 * connection that DROP DATABASE … WITH (FORCE) terminates right after would crash the bench.
 */
export async function startGraphile(
  url: string,
  taskList: TaskList,
  setup: GraphileSetup = GRAPHILE_DEFAULTS,
): Promise<Runner> {
  const pool = new pg.Pool({ connectionString: url, max: setup.poolSize });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const worker: GraphileConfig.WorkerOptions = {};
  if (setup.localQueueSize !== null) worker.localQueue = { size: setup.localQueueSize };
  if (setup.batchDelayMs !== null) {
    worker.completeJobBatchDelay = setup.batchDelayMs;
    worker.failJobBatchDelay = setup.batchDelayMs;
  }
  const runner = await run({
    pgPool: pool,
    concurrency: setup.concurrency,
    noHandleSignals: true,
    logger: silentLogger,
    taskList,
    crontab: '',
    preset: { worker },
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

/** Jobs per second for Graphile Worker draining `items` no-op jobs. */
export async function drainGraphile(url: string, items: number, setup: GraphileSetup): Promise<number> {
  const utils = await makeWorkerUtils({ connectionString: url, logger: silentLogger });
  try {
    await utils.migrate();
    await utils.addJobs(
      Array.from({ length: items }, (_, index) => ({ identifier: 'noop', payload: { i: index } })),
    );
  } finally {
    await utils.release();
  }
  return withClient(url, async (monitor) => {
    await readyForDrain(monitor);
    const count = counter(items);
    const runner = await startGraphile(url, { noop: () => Promise.resolve(count.hit()) }, setup);
    try {
      await count.all;
      await zeroCount(
        monitor,
        'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',
        'Graphile drain',
      );
      return items / ((nowMs() - count.first()) / 1000);
    } finally {
      await runner.stop();
    }
  });
}

/** Jobs per second for pg-boss draining `items` no-op jobs. */
export async function drainPgBoss(url: string, items: number, setup: PgBossSetup): Promise<number> {
  const boss = new PgBoss({ connectionString: url, schedule: false });
  boss.on('error', (error: Error) => process.stderr.write(`bench: pg-boss: ${error.message}\n`));
  await boss.start();
  try {
    const queue = 'noop';
    await boss.createQueue(queue);
    await boss.insert(Array.from({ length: items }, (_, index) => ({ name: queue, data: { i: index } })));
    return await withClient(url, async (monitor) => {
      await readyForDrain(monitor);
      const count = counter(items);
      const options = { batchSize: setup.batchSize, pollingIntervalSeconds: setup.pollSeconds };
      for (let workerIndex = 0; workerIndex < setup.workers; workerIndex++) {
        await boss.work(queue, options, (jobs) => Promise.resolve(count.hit(jobs.length)));
      }
      await count.all;
      const open = `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'noop' AND state <> 'completed'`;
      await zeroCount(monitor, open, 'pg-boss drain');
      return items / ((nowMs() - count.first()) / 1000);
    });
  } finally {
    await boss.stop({ graceful: false, wait: true, timeout: 1000 });
  }
}

/** Jobs per second for one peer configuration draining `items` no-op jobs on a fresh database. */
export const drainPeer = (url: string, items: number, setup: PeerSetup): Promise<number> =>
  setup.system === 'graphile' ? drainGraphile(url, items, setup) : drainPgBoss(url, items, setup);
