/**
 * The hand-off-kill scenario (docs/decisions/0024): waiting workers, real processes, take jobs that
 * enqueues hand to them (claimNext with `waitMs`) while this orchestrator enqueues one job at a time
 * and SIGKILLs workers at two moments: right after an enqueue handed a job to one (before it could
 * take it), and after a worker took a job and before its finish committed. Each dead worker is
 * replaced by a new one with a session of its own; the dead sessions go stale past their TTL and
 * the rescue (recovery.rescueStale, swept here as `baton up` does) gives their jobs back. Checked
 * over the workers' histories and the ledger:
 *  - nothing acknowledged is lost: every finish a worker was told committed is `job:finished` done
 *    under that epoch, and the job is done;
 *  - nothing runs twice under one epoch, one `job:claimed` per (job, epoch), every job done once;
 *  - the hand-offs happened, and the kills hit them: jobs handed to a killed session came back
 *    (`job:requeued`) and were done by another;
 *  - every job change in the ledger is an allowed transition (check-jobs.ts' job-lifecycle).
 * The negative control (`ackEarly`) acknowledges finishes before their commit: the kills then lose
 * acknowledged completions and the checker fails.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/open.js';
import { HAND_OFF_WORKER_ENV, type HandOffWorkerConfig } from './config.js';
import { Findings, showEntry, type CheckResult } from './check-types.js';
import { checkJobLifecycle } from './check-jobs.js';
import { checkAcknowledged, onceEach, type BatchKillOptions } from './batch-kill.js';
import { collectServer, type ServerHistory } from './collect.js';
import { readHistory } from './history.js';
import { Rng } from './prng.js';

const WORKER = fileURLToPath(new URL('./hand-off-worker.js', import.meta.url));
const TTL_MS = 1_500;

/** As batch-kill's; `kills` counts each kind: after a hand-off, and between a take and its finish. */
export type HandOffKillOptions = BatchKillOptions;

export interface HandOffKillResult {
  readonly kills: { readonly handed: number; readonly running: number };
  readonly checks: readonly CheckResult[];
  readonly violations: number;
}

interface Worker {
  readonly child: ChildProcess;
  session: number | null;
  waited: boolean;
}

export async function runHandOffKill(o: HandOffKillOptions): Promise<HandOffKillResult> {
  const log = o.log ?? (() => undefined);
  const rng = new Rng(o.seed).fork('hand-off-kill');
  const dir = mkdtempSync(join(tmpdir(), 'baton-hand-off-kill-'));
  const url = o.url ?? join(dir, 'baton.db');
  const admin = await openStore(url);
  const total = o.jobs ?? 120;
  const wanted = o.kills ?? 3;
  const kills = { handed: 0, running: 0 };
  const killedSessions = new Set<number>();
  const live = new Map<string, Worker>();
  let generation = 0;
  let rescuing = true;
  const kill = (name: string, why: string): void => {
    const worker = live.get(name);
    if (worker === undefined) return;
    log(`hand-off-kill: SIGKILL ${name} (session ${worker.session ?? '?'}) ${why}`);
    worker.child.kill('SIGKILL');
    if (worker.session !== null) killedSessions.add(worker.session);
    live.delete(name);
    start();
  };
  const start = (): void => {
    const name = `hand-off-worker-${++generation}`;
    const cfg: HandOffWorkerConfig = {
      url,
      history: join(dir, `history-${name}.jsonl`),
      name,
      ttlMs: TTL_MS,
      ackEarly: o.ackEarly === true,
    };
    const child = fork(WORKER, [], { env: { ...process.env, [HAND_OFF_WORKER_ENV]: JSON.stringify(cfg) } });
    const worker: Worker = { child, session: null, waited: false };
    live.set(name, worker);
    child.on('message', (m: { type?: string; session?: number }) => {
      if (m.type === 'session') worker.session = m.session ?? null;
      if (m.type === 'waiting') worker.waited = true;
      if (m.type === 'between' && kills.running < wanted && rng.chance(0.2)) {
        kills.running++;
        kill(name, 'between its take and its finish');
      }
    });
  };
  // `baton up`'s sweep, quicker: a dead worker's session goes stale past its TTL.
  const rescue = (async () => {
    while (rescuing) {
      await admin.recovery
        .rescueStale({ staleAfterMs: TTL_MS, policy: { backoffBaseMs: 50, backoffMaxMs: 200 } })
        .catch(() => undefined);
      await sleep(250);
    }
  })();
  try {
    for (let w = 0; w < (o.workers ?? 3); w++) start();
    const ready = Date.now() + 30_000;
    while (![...live.values()].every((w) => w.waited) && Date.now() < ready) await sleep(20);
    for (let i = 0; i < total; i++) {
      await sleep(rng.between(5, 30));
      const { job } = await admin.jobs.enqueue({ key: `hand-off-${o.seed}-${i}`, attemptMax: 10 });
      if (job.session === null || kills.handed >= wanted || !rng.chance(0.15)) continue;
      const holder = [...live.entries()].find(([, w]) => w.session === job.session);
      if (holder === undefined) continue;
      kills.handed++;
      kill(holder[0], `right after job ${job.id} was handed to it`);
    }
    const deadline = Date.now() + 120_000;
    for (;;) {
      const active = await admin.jobs.list({ status: ['queued', 'claimed', 'running'], limit: 1 });
      if (active.length === 0) break;
      if (Date.now() > deadline) {
        log('hand-off-kill: timed out draining; checking what is stuck');
        break;
      }
      await sleep(200);
    }
    rescuing = false;
    await rescue;
    for (const worker of live.values()) worker.child.kill('SIGKILL');
    const client = [...Array(generation).keys()].flatMap((i) =>
      readHistory(join(dir, `history-hand-off-worker-${i + 1}.jsonl`)),
    );
    const server = await collectServer(admin);
    const { ledger, jobs } = server;
    const checks = [
      checkAcknowledged(
        client,
        ledger,
        jobs,
        'hand-off-acknowledged',
        'Every finish acknowledged to a waiting worker is committed under its epoch [3]',
      ),
      checkOnce(client, ledger, jobs, kills, killedSessions),
      checkJobLifecycle({ server }),
    ];
    return { kills, checks, violations: checks.reduce((n, c) => n + c.count, 0) };
  } finally {
    rescuing = false;
    await rescue;
    for (const worker of live.values()) worker.child.kill('SIGKILL');
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * [2, 4, 6] Once per epoch and done once (onceEach); the hand-offs happened; the jobs handed to a
 * killed session came back and were done by another session.
 */
function checkOnce(
  client: Parameters<typeof onceEach>[1],
  ledger: ServerHistory['ledger'],
  jobs: ServerHistory['jobs'],
  kills: HandOffKillResult['kills'],
  killedSessions: ReadonlySet<number>,
): CheckResult {
  const f = new Findings();
  const checked = onceEach(f, client, ledger, jobs);
  const handed = ledger.filter((e) => e.type === 'job:claimed' && e.detail['handedOff'] === true);
  if (handed.length === 0) f.add('no enqueue handed its job to a waiting worker', []);
  const toKilled = handed.filter((e) => e.session !== null && killedSessions.has(e.session));
  const cameBack = toKilled.filter((e) =>
    ledger.some((later) => later.type === 'job:requeued' && later.jobId === e.jobId && later.id > e.id),
  );
  if (kills.handed > 0 && cameBack.length === 0) {
    f.add('no job handed to a killed worker came back: the kills missed the hand-offs', []);
  }
  for (const e of cameBack) {
    const doneBy = ledger.find((x) => x.type === 'job:finished' && x.jobId === e.jobId)?.session;
    if (doneBy === e.session) {
      const rows = ledger.filter((x) => x.jobId === e.jobId).map(showEntry);
      f.add(`job ${e.jobId} was finished by the session that was killed`, rows);
    }
  }
  return f.result(
    'hand-off-once-per-epoch',
    'Nothing runs twice under one epoch; every job is done exactly once; hand-offs to killed workers came back [2, 4, 6]',
    checked,
    [
      `${kills.handed} kills after a hand-off, ${kills.running} between a take and its finish`,
      `${handed.length} jobs handed off, ${toKilled.length} to a killed session, ${cameBack.length} of them given back`,
    ],
  );
}
