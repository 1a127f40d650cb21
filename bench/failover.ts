/**
 * Failover: the time from SIGKILL of the leading `baton up` to the standby's first dispatch.
 *
 * Two `baton up` processes (hosts a and b) share one database. Once one leads (the dispatcher
 * lease has a holder), the leader is killed with SIGKILL; right after, a few no-op jobs are
 * queued, so the new leader has work the moment it takes over. The figure is judged on the
 * database clock: from `store.now()` read just before the kill to the `at` of the first
 * 'job:placed' audit row under the next term (old term + 1). It covers the rest of the dead
 * leader's lease, the standby's retry interval and its first dispatch pass.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UP_DEFAULTS } from '../src/daemon/up.js';
import { openStore } from '../src/store/open.js';
import { median, progress } from './stats.js';

export interface FailoverResult {
  /** Median of the repetitions: SIGKILL of the leader → first dispatch by the standby. */
  readonly failoverMs: number;
  /** The lease TTL the cluster ran with. */
  readonly ttlMs: number;
  /** The retry interval of a standby, for the target TTL + one retry interval. */
  readonly retryMs: number;
  readonly runs: readonly number[];
}

export interface FailoverPlan {
  /** The lease TTL in seconds; null runs `baton up` with its default (15 s). */
  readonly ttlSeconds: number | null;
  readonly reps: number;
}

const DEFAULT_TTL_MS = UP_DEFAULTS.leaseTtlMs;
const DEFAULT_RETRY_MS = UP_DEFAULTS.retryIntervalMs;
const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(20);
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * One repetition on the database at `db` (a fresh one: a SQLite path or a PostgreSQL URL).
 * Returns SIGKILL → first dispatch under the next term, in ms of database time.
 */
async function failoverOnce(db: string, plan: FailoverPlan): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-failover-'));
  const store = await openStore(db);
  const children = new Map<string, ChildProcess>();
  try {
    const ttlArgs = plan.ttlSeconds === null ? [] : ['--lease-ttl', String(plan.ttlSeconds)];
    for (const host of ['a', 'b']) {
      const fd = openSync(join(dir, `up-${host}.log`), 'a');
      children.set(
        host,
        spawn(process.execPath, [BIN, '--db', db, 'up', '--host', host, ...ttlArgs], {
          cwd: dir,
          stdio: ['ignore', fd, fd],
        }),
      );
      closeSync(fd);
    }
    const lease = await waitFor('a leader', 30_000, async () => {
      const current = await store.leases.get('dispatcher');
      return current !== null && current.holder !== null && current.expiresAt > (await store.now())
        ? current
        : null;
    });
    // Both runners must be up, or the standby may still be starting when the leader dies.
    await waitFor('both hosts', 30_000, async () => {
      const live = (await store.sessions.list({ liveOnly: true })).filter(
        (session) => session.kind === 'daemon',
      );
      return live.length >= 2 ? live : null;
    });
    const leaderSession = await store.sessions.get(Number(lease.holder));
    const leaderHost = leaderSession?.host;
    const leader = leaderHost === undefined ? undefined : children.get(leaderHost);
    if (leader === undefined) throw new Error(`bench: leader ${lease.holder} is not one of ours`);
    const seenAudit = (await store.audit.list({ limit: 1_000_000 })).at(-1)?.id ?? 0;
    const t0 = await store.now();
    leader.kill('SIGKILL');
    await exited(leader);
    for (let index = 0; index < 4; index++)
      await store.jobs.enqueue({ key: `failover-${index}`, command: 'true' });
    const placedAt = await waitFor('a dispatch under the next term', 120_000, async () => {
      const placed = await store.audit.list({ type: 'job:placed', afterId: seenAudit, limit: 100 });
      const first = placed.find((event) => event.detail['term'] === lease.term + 1);
      return first === undefined ? null : first.at;
    });
    return placedAt - t0;
  } finally {
    for (const child of children.values()) child.kill('SIGKILL');
    await Promise.all([...children.values()].map(exited));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `fresh` hands each repetition a fresh database and drops it afterwards (the bench's onPg or
 * onTempFile).
 */
export async function measureFailover(
  fresh: <T>(label: string, work: (db: string) => Promise<T>) => Promise<T>,
  plan: FailoverPlan,
): Promise<FailoverResult> {
  const runs: number[] = [];
  for (let rep = 0; rep < plan.reps; rep++) {
    const ms = await fresh('failover', (db) => failoverOnce(db, plan));
    progress(`failover ${rep + 1}/${plan.reps}: ${ms} ms`);
    runs.push(ms);
  }
  return {
    failoverMs: median(runs),
    ttlMs: plan.ttlSeconds === null ? DEFAULT_TTL_MS : plan.ttlSeconds * 1000,
    retryMs: DEFAULT_RETRY_MS,
    runs,
  };
}
