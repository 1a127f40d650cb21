/**
 * One workload process. It loops: start a session, claim a random task from a small shared set,
 * record 1-3 effects under the claim's epoch (sometimes heartbeating the claim), release, and
 * now and then enqueue a job. A background loop heartbeats the session. Every operation goes
 * to the history as invoke, then ok / fail / info. After an unknown outcome the worker exits
 * (as a crashed agent would) and the supervisor starts it again under a new session.
 *
 *   CHAOS_WORKER='{"url":…}' node --import clock-offset.js worker.js
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BatonError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { EXIT_UNKNOWN, WORKER_ENV, type WorkerConfig } from './config.js';
import { HistoryWriter } from './history.js';
import { Rng } from './prng.js';

const cfg = JSON.parse(process.env[WORKER_ENV] ?? '{}') as WorkerConfig;
const history = new HistoryWriter(cfg.history, cfg.name);
const rng = new Rng(cfg.seed).fork(`${cfg.name}#${cfg.generation}`);
let stopping = false;
process.on('SIGTERM', () => (stopping = true));
/** When SIGUSR2 armed the hold (this process's clock; only differences matter). */
let holdArmedAt = -Infinity;
let currentOp = 0;
process.on('SIGUSR2', () => (holdArmedAt = Date.now()));

type Outcome = readonly ['ok' | 'fail', Record<string, unknown>];

/** Inside the effect's write transaction (SQLite test hook): hold it open to be killed in it. */
function hold(): void {
  // An arm the nemesis gave up on (no write within its wait) lapses rather than fire later.
  if (Date.now() - holdArmedAt > 4000) return;
  holdArmedAt = -Infinity;
  history.line(currentOp, 'hold', 'info', { ms: cfg.holdMs });
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, cfg.holdMs);
}

function unknown(n: number, op: string, error: unknown, fields: Record<string, unknown> = {}): never {
  const message = error instanceof Error ? error.message : String(error);
  history.line(n, op, 'info', { ...fields, error: message, busy: /locked|busy/i.test(message) });
  process.exit(EXIT_UNKNOWN);
}

/** Runs one operation with its history lines; a definite refusal is `fail`, anything unclear `info`. */
async function op<T>(
  name: string,
  fields: Record<string, unknown>,
  call: (n: number) => Promise<T>,
  classify: (result: T) => Outcome,
): Promise<T> {
  const n = history.invoke(name, fields);
  currentOp = n;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${cfg.opTimeoutMs} ms`)), cfg.opTimeoutMs);
  });
  try {
    const result = await Promise.race([call(n), timeout]);
    const [phase, out] = classify(result);
    history.line(n, name, phase, { ...fields, ...out });
    return result;
  } catch (error) {
    if (error instanceof BatonError && error.code !== 'store_unavailable') {
      const busy = /locked|busy/i.test(error.message);
      history.line(n, name, 'fail', { ...fields, reason: error.code, error: error.message, busy });
      throw error;
    }
    return unknown(n, name, error, fields);
  } finally {
    clearTimeout(timer);
  }
}

const fenced = (r: { ok: boolean; current?: unknown }): Outcome =>
  r.ok ? ['ok', {}] : ['fail', { reason: 'fenced', current: r.current ?? null }];

async function beatSession(store: Store, session: number, alive: { dead: boolean }): Promise<void> {
  while (!alive.dead && !stopping) {
    await sleep(cfg.heartbeatMs);
    if (alive.dead || stopping) return;
    const r = await op('heartbeat', { session }, () => store.sessions.heartbeat({ session }), fenced);
    if (!r.ok) alive.dead = true;
  }
}

/** One claim: effects under its epoch, then the release. */
async function work(store: Store, session: number, jobs: { count: number }): Promise<void> {
  if (rng.chance(cfg.jobChance)) {
    const key = `job-${cfg.name}-g${cfg.generation}-${++jobs.count}`;
    const workspace = cfg.jobWorkspace;
    if (workspace !== null && rng.chance(1 / 3)) {
      // A run that needs the filesystem: it may only run while holding the workspace's lock.
      await op(
        'task.add',
        { key },
        () => store.tasks.add({ key }),
        () => ['ok', {}],
      );
      const require = () =>
        store.workspaceTasks.setRequirements({ key, requiresFilesystem: true, workspace });
      await op('requirements', { key, workspace }, require, () => ['ok', {}]);
    }
    await op(
      'enqueue',
      { key },
      () => store.jobs.enqueue({ key, command: cfg.jobCommand, attemptMax: 3 }),
      (r) => ['ok', { job: r.job.id, created: r.created }],
    );
  }
  const key = rng.pick(cfg.tasks);
  const claim = await op(
    'claim',
    { key, session },
    () => store.claims.acquire({ key, session }),
    (r) =>
      r.ok
        ? ['ok', { epoch: r.claim.epoch, granted: r.granted }]
        : ['fail', { reason: 'held', holder: r.holder }],
  );
  if (!claim.ok) {
    await sleep(rng.between(20, 200));
    return;
  }
  const epoch = claim.claim.epoch;
  const lock = rng.chance(0.4) ? await lockWorkspace(store, session) : null;
  let refused = false;
  for (let i = 1, k = rng.between(1, 3); i <= k && !refused; i++) {
    await sleep(rng.between(50, 400));
    if (rng.chance(0.3)) {
      const beat = () => store.sessions.heartbeat({ session, claim: { key, epoch } });
      refused = !(await op('heartbeat', { session, key, epoch }, beat, fenced)).ok;
      if (refused) break;
    }
    const record = (n: number) =>
      store.effects.record({
        key,
        session,
        epoch,
        kind: 'write',
        payload: { w: cfg.name, pid: process.pid, n },
      });
    const effect = await op('effect', { key, session, epoch }, record, (r) =>
      r.ok ? ['ok', { effect: r.effect.id }] : ['fail', { reason: 'fenced', current: r.current }],
    );
    refused = !effect.ok;
  }
  if (lock !== null) {
    const { workspace } = lock;
    const unlock = () => store.workspaceLocks.release({ workspace, session, epoch: lock.epoch });
    await op('unlock', { workspace, session, epoch: lock.epoch }, unlock, fenced);
  }
  // Never done: these tasks are claimed again and again, and a done task is never claimed again.
  const outcome = 'released';
  await op(
    'release',
    { key, session, epoch },
    () => store.claims.release({ key, session, epoch, outcome }),
    fenced,
  );
}

/** An exclusive workspace lock, taken beside the claim: the other thing two runs must never share. */
async function lockWorkspace(
  store: Store,
  session: number,
): Promise<{ workspace: string; epoch: number } | null> {
  if (cfg.workspaces.length === 0) return null;
  const workspace = rng.pick(cfg.workspaces);
  const r = await op(
    'lock',
    { workspace, session },
    () => store.workspaceLocks.acquire({ workspace, session }),
    (l) =>
      l.ok
        ? ['ok', { epoch: l.lock.epoch, granted: l.granted }]
        : ['fail', { reason: 'held', holder: l.holder }],
  );
  return r.ok ? { workspace, epoch: r.lock.epoch } : null;
}

async function main(): Promise<void> {
  const n = history.invoke('open', { generation: cfg.generation });
  let store: Store;
  try {
    store = await openStore(cfg.url, {
      unsafeDisableFencing: cfg.unsafeDisableFencing ? true : undefined,
      unsafeInsideEffectWrite: cfg.holdMs > 0 ? hold : undefined,
    });
  } catch (error) {
    return unknown(n, 'open', error);
  }
  history.line(n, 'open', 'ok');
  const jobs = { count: 0 };
  while (!stopping) {
    const start = () => store.sessions.start({ kind: 'agent', host: cfg.name, pid: process.pid });
    const s = await op('session.start', {}, start, (r) => ['ok', { session: r.id }]);
    const alive = { dead: false };
    const beating = beatSession(store, s.id, alive);
    while (!alive.dead && !stopping) {
      try {
        await work(store, s.id, jobs);
      } catch (error) {
        // A definite refusal, recorded as fail. `fenced`: this session is no longer live.
        if (error instanceof BatonError && error.code === 'fenced') alive.dead = true;
        await sleep(100);
      }
    }
    alive.dead = true;
    await beating;
    if (stopping)
      await op(
        'session.end',
        { session: s.id },
        () => store.sessions.end(s.id),
        () => ['ok', {}],
      );
  }
  await store.close();
  history.close();
}

await main();
