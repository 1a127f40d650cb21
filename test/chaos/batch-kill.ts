/**
 * The batch-kill scenario (docs/decisions/0017): batch workers, real processes, drain a queue
 * through jobs.batch while this orchestrator SIGKILLs a worker right after it has fetched and run a
 * batch and before its completion commits, then starts another in its place. Once the kills are
 * done the survivors drain the queue; the dead workers' jobs come back when their leases pass.
 * Checked over the workers' histories and the ledger:
 *  - nothing acknowledged is lost: every completion a worker was told committed is `job:finished`
 *    done under that epoch, and the job is done;
 *  - nothing runs twice under one epoch: one `run` per (job, epoch), one `job:claimed` per (job,
 *    epoch);
 *  - every job ends done exactly once, and the kills really hit batches between fetch and
 *    completion (their jobs were given back: `job:requeued`, lease expired);
 *  - every job change in the ledger is an allowed transition (check-jobs.ts' job-lifecycle).
 * The negative control (`ackEarly`) acknowledges completions before their commit, as a worker that
 * defers them in memory would: the kills then lose acknowledged completions and the checker fails.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/open.js';
import { BATCH_WORKER_ENV, type BatchWorkerConfig } from './config.js';
import { Findings, showEntry, type CheckResult } from './check-types.js';
import { checkJobLifecycle } from './check-jobs.js';
import { collectServer, type ServerHistory } from './collect.js';
import { readHistory, type HistoryLine } from './history.js';
import { Rng } from './prng.js';

const WORKER = fileURLToPath(new URL('./batch-worker.js', import.meta.url));

export interface BatchKillOptions {
  /** A SQLite path is made in a temp folder when null; else a PostgreSQL URL. */
  readonly url: string | null;
  readonly seed: number;
  readonly jobs?: number;
  readonly workers?: number;
  readonly kills?: number;
  readonly ackEarly?: boolean;
  readonly log?: (line: string) => void;
}

export interface BatchKillResult {
  readonly kills: number;
  readonly checks: readonly CheckResult[];
  readonly violations: number;
}

const LEASE_MS = 2_000;

export async function runBatchKill(o: BatchKillOptions): Promise<BatchKillResult> {
  const log = o.log ?? (() => undefined);
  const rng = new Rng(o.seed).fork('batch-kill');
  const dir = mkdtempSync(join(tmpdir(), 'baton-batch-kill-'));
  const url = o.url ?? join(dir, 'baton.db');
  const admin = await openStore(url);
  const total = o.jobs ?? 200;
  const killsWanted = o.kills ?? 4;
  const live = new Map<string, ChildProcess>();
  let kills = 0;
  let generation = 0;
  try {
    for (let i = 0; i < total; i++) await admin.jobs.enqueue({ key: `batch-${o.seed}-${i}` });
    const start = (): void => {
      const name = `batch-worker-${++generation}`;
      const cfg: BatchWorkerConfig = {
        url,
        history: join(dir, `history-${name}.jsonl`),
        name,
        take: rng.between(5, 20),
        leaseMs: LEASE_MS,
        ackEarly: o.ackEarly === true,
      };
      const child = fork(WORKER, [], { env: { ...process.env, [BATCH_WORKER_ENV]: JSON.stringify(cfg) } });
      live.set(name, child);
      child.on('message', (m: { type?: string }) => {
        if (m.type !== 'between' || kills >= killsWanted || !rng.chance(0.3)) return;
        kills++;
        log(`batch-kill: SIGKILL ${name} (pid ${child.pid ?? '?'}) between fetch and completion`);
        child.kill('SIGKILL');
        live.delete(name);
        start();
      });
    };
    for (let w = 0; w < (o.workers ?? 3); w++) start();
    const deadline = Date.now() + 120_000;
    for (;;) {
      const active = await admin.jobs.list({ status: ['queued', 'claimed', 'running'], limit: 1 });
      if (active.length === 0 && kills >= killsWanted) break;
      if (Date.now() > deadline) {
        log('batch-kill: timed out draining; checking what is stuck');
        break;
      }
      await sleep(200);
    }
    for (const child of live.values()) child.kill('SIGKILL');
    const client = [...Array(generation).keys()].flatMap((i) =>
      readHistory(join(dir, `history-batch-worker-${i + 1}.jsonl`)),
    );
    const server = await collectServer(admin);
    const { ledger, jobs } = server;
    const checks = [
      checkAcknowledged(client, ledger, jobs),
      checkOncePerEpoch(client, ledger, jobs, kills),
      // Every take is one `job:claimed` row that started its job (decision 0023).
      checkJobLifecycle({ server }),
    ];
    return { kills, checks, violations: checks.reduce((n, c) => n + c.count, 0) };
  } finally {
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type Ledger = ServerHistory['ledger'];
type Jobs = ServerHistory['jobs'];

/**
 * [3] Every completion acknowledged to a worker (history `finish` ok, its `done` pairs of job and
 * epoch) is in the ledger under its epoch, and the job is done. Shared with hand-off-kill.ts.
 */
export function checkAcknowledged(
  client: readonly HistoryLine[],
  ledger: Ledger,
  jobs: Jobs,
  name = 'batch-acknowledged',
  title = 'Every completion acknowledged to a batch worker is committed under its epoch [3]',
): CheckResult {
  const f = new Findings();
  let checked = 0;
  const finished = new Set(
    ledger
      .filter((e) => e.type === 'job:finished' && e.detail['status'] === 'done')
      .map((e) => `${e.jobId}@${e.epoch}`),
  );
  const status = new Map(jobs.map((j) => [j.id, j.status]));
  for (const l of client.filter((x) => x.op === 'finish' && x.phase === 'ok')) {
    for (const [job, epoch] of l['done'] as [number, number][]) {
      checked++;
      if (!finished.has(`${job}@${epoch}`) || status.get(job) !== 'done') {
        f.add(`acknowledged completion of job ${job} at epoch ${epoch} is lost`, [JSON.stringify(l)]);
      }
    }
  }
  return f.result(name, title, checked);
}

/**
 * [2, 4] One run (history `run`) and one `job:claimed` row per (job, epoch), and every job done
 * exactly once, added to `f`; how many items were checked. Shared with hand-off-kill.ts.
 */
export function onceEach(f: Findings, client: readonly HistoryLine[], ledger: Ledger, jobs: Jobs): number {
  const runs = new Map<string, number>();
  for (const l of client.filter((x) => x.op === 'run')) {
    const k = `${String(l['job'])}@${String(l['epoch'])}`;
    runs.set(k, (runs.get(k) ?? 0) + 1);
  }
  for (const [k, n] of runs) if (n > 1) f.add(`job ${k} ran ${n} times under one epoch`, []);
  const claims = new Map<string, number>();
  const ends = new Map<number, number>();
  for (const e of ledger) {
    if (e.type === 'job:claimed')
      claims.set(`${e.jobId}@${e.epoch}`, (claims.get(`${e.jobId}@${e.epoch}`) ?? 0) + 1);
    if (e.type === 'job:finished' && e.jobId !== null) ends.set(e.jobId, (ends.get(e.jobId) ?? 0) + 1);
  }
  for (const [k, n] of claims) if (n > 1) f.add(`job ${k} was claimed ${n} times under one epoch`, []);
  for (const j of jobs) {
    if (j.status !== 'done') f.add(`job ${j.id} ended ${j.status}, not done`, []);
    if ((ends.get(j.id) ?? 0) !== 1) f.add(`job ${j.id} finished ${ends.get(j.id) ?? 0} times`, []);
  }
  return runs.size + claims.size + jobs.length;
}

/** [2, 4, 6] One run and one claim per (job, epoch); every job done once; the kills hit batches. */
function checkOncePerEpoch(
  client: readonly HistoryLine[],
  ledger: Ledger,
  jobs: Jobs,
  kills: number,
): CheckResult {
  const f = new Findings();
  const checked = onceEach(f, client, ledger, jobs);
  const givenBack = ledger.filter((e) => e.type === 'job:requeued');
  if (kills > 0 && givenBack.length === 0) f.add('the kills gave no job back: they missed the batches', []);
  return f.result(
    'batch-once-per-epoch',
    'Nothing runs twice under one epoch; every job is done exactly once; the kills hit batches [2, 4, 6]',
    checked,
    [`${kills} kills, ${givenBack.length} jobs given back`, ...givenBack.slice(0, 3).map(showEntry)],
  );
}
