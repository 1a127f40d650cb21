/**
 * One waiting worker of the hand-off-kill scenario (hand-off-kill.ts): a session of its own,
 * beating at a fifth of its TTL, then a loop of claimNext with `waitMs` (so an enqueue hands its
 * job to this worker: docs/decisions/0024), waiting on the store's wake-ups when none came. Each
 * job taken is run (a `run` history line per job and epoch) and finished; the finish is
 * acknowledged (`finish` ok) only once its commit answered. The negative control acknowledges
 * before it. It tells the parent when it waits, so the parent knows a hand-off can reach it.
 *
 *   HAND_OFF_WORKER='{"url":…}' node hand-off-worker.js
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../../src/store/open.js';
import { HistoryWriter } from './history.js';
import { HAND_OFF_WORKER_ENV, type HandOffWorkerConfig } from './config.js';

const cfg = JSON.parse(process.env[HAND_OFF_WORKER_ENV] ?? '{}') as HandOffWorkerConfig;
const history = new HistoryWriter(cfg.history, cfg.name);
const WAIT_MS = 5_000;

async function main(): Promise<void> {
  const store = await openStore(cfg.url);
  const session = await store.sessions.start({
    kind: 'agent',
    host: cfg.name,
    pid: process.pid,
    ttlMs: cfg.ttlMs,
  });
  const beat = setInterval(
    () => void store.sessions.heartbeat({ session: session.id }).catch(() => {}),
    cfg.ttlMs / 5,
  );
  beat.unref();
  const waiter = await store.wakeups.waiter();
  process.send?.({ type: 'session', session: session.id });
  for (;;) {
    const n = history.invoke('take', { session: session.id });
    const job = await store.jobs.claimNext({ session: session.id, start: true, waitMs: WAIT_MS });
    history.line(n, 'take', 'ok', { session: session.id, job: job?.id ?? null, epoch: job?.epoch ?? null });
    if (job === null) {
      process.send?.({ type: 'waiting' });
      await waiter.wait(WAIT_MS);
      continue;
    }
    history.line(0, 'run', 'info', { job: job.id, epoch: job.epoch });
    const f = history.invoke('finish', { session: session.id, job: job.id, epoch: job.epoch });
    if (cfg.ackEarly) history.line(f, 'finish', 'ok', { done: [[job.id, job.epoch]], early: true });
    // Between the take and the finish: the parent may SIGKILL us now.
    process.send?.({ type: 'between' });
    await sleep(20);
    const result = await store.jobs.finish({
      id: job.id,
      session: session.id,
      epoch: job.epoch,
      status: 'done',
    });
    if (!cfg.ackEarly) {
      history.line(f, 'finish', result.ok ? 'ok' : 'fail', { done: result.ok ? [[job.id, job.epoch]] : [] });
    }
  }
}

await main();
