/**
 * One batch worker of the batch-kill scenario (batch-kill.ts): a session of its own, then a loop
 * of jobs.batch: take up to `take` jobs under a lease, run each (a `run` history line per job and
 * epoch), tell the parent it is between fetch and completion (the moment it may be SIGKILLed), then
 * complete them all and take the next batch in one commit. A completion is acknowledged (`finish`
 * ok, with the members the store finished) only once that commit answered; the negative control
 * acknowledges before it, as a worker that defers completions in memory would.
 *
 *   BATCH_WORKER='{"url":…}' node batch-worker.js
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../../src/store/open.js';
import type { Job } from '../../src/core/job.js';
import { HistoryWriter } from './history.js';
import { BATCH_WORKER_ENV, type BatchWorkerConfig } from './config.js';

const cfg = JSON.parse(process.env[BATCH_WORKER_ENV] ?? '{}') as BatchWorkerConfig;
const history = new HistoryWriter(cfg.history, cfg.name);
const pairs = (jobs: readonly Job[]) => jobs.map((j) => [j.id, j.epoch]);

async function main(): Promise<void> {
  const store = await openStore(cfg.url);
  const session = await store.sessions.start({
    kind: 'agent',
    host: cfg.name,
    pid: process.pid,
    ttlMs: 60_000,
  });
  let n = history.invoke('fetch', { session: session.id });
  let r = await store.jobs.batch({ session: session.id, take: cfg.take, leaseMs: cfg.leaseMs });
  history.line(n, 'fetch', 'ok', { session: session.id, jobs: pairs(r.taken) });
  for (;;) {
    if (r.taken.length === 0) {
      await sleep(100);
      n = history.invoke('fetch', { session: session.id });
      r = await store.jobs.batch({ session: session.id, take: cfg.take, leaseMs: cfg.leaseMs });
      history.line(n, 'fetch', 'ok', { session: session.id, jobs: pairs(r.taken) });
      continue;
    }
    for (const j of r.taken) history.line(0, 'run', 'info', { job: j.id, epoch: j.epoch });
    const finish = r.taken.map((j) => ({ id: j.id, epoch: j.epoch, status: 'done' as const }));
    n = history.invoke('finish', { session: session.id, jobs: pairs(r.taken) });
    if (cfg.ackEarly)
      history.line(n, 'finish', 'ok', { session: session.id, done: pairs(r.taken), early: true });
    // Between fetch and completion: the parent may SIGKILL us now.
    process.send?.({ type: 'between' });
    await sleep(20);
    const taken = r.taken;
    r = await store.jobs.batch({ session: session.id, finish, take: cfg.take, leaseMs: cfg.leaseMs });
    const done = taken.filter((_, i) => r.finished[i]?.ok === true);
    if (!cfg.ackEarly) history.line(n, 'finish', 'ok', { session: session.id, done: pairs(done) });
    history.line(0, 'fetch', 'info', { session: session.id, jobs: pairs(r.taken) });
  }
}

await main();
