/** Real `baton up` processes for end-to-end tests, with their logs and a store to look through. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { processExists, treeMembers } from '../../src/os/process-tree.js';
import type { TestDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'baton.js');

/**
 * Short timings so faults play out in seconds; and a stop at once (`--drain 0`), so a test that
 * stops `baton up` with agents running sees them requeued, not waited for: the drain's tests
 * (drain.test.ts) pass --drain after these, and the last one counts.
 */
export const FAST = { ttlMs: 2000, retryMs: 500, heartbeatMs: 500, staleMs: 2000 };
const FAST_ARGS = [
  '--drain',
  '0',
  '--lease-ttl',
  '2',
  '--retry-interval',
  '0.5',
  '--heartbeat-interval',
  '0.5',
  '--stale-after',
  '2',
];

/**
 * Baton's default stale threshold (10 s), for a test about something else than fencing: FAST's
 * 2 s leaves a trust window of 1 s (minus two 0.5 s beats, core/heartbeat-windows.ts), which a
 * loaded machine's heartbeat round trip can pass, so the runner fences itself and rejoins
 * (docs/decisions/0042). Given after FAST's arguments, it is the one that counts.
 */
export const STEADY = ['--stale-after', '10'];

export class UpProcess {
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly logPath: string,
  ) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  log(): string {
    return readFileSync(this.logPath, 'utf8');
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Waits for `pattern` in the log; a timeout names the log's last lines, so a failure says why. */
  waitForLog(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    return this.waitFor(() => pattern.test(this.log()), timeoutMs, `${this.name} to log ${pattern}`);
  }

  /**
   * Waits until this `baton up` has logged its `count`th `running as session N` line (one per join
   * and rejoin, daemon/running-line.ts): its heartbeat, placement poll, lease and dispatch loops
   * have each run. `joined as session N` comes before any of that. A timeout names the last lines.
   */
  waitRunning(timeoutMs = 15_000, count = 1): Promise<void> {
    const lines = (): number => this.log().match(/running as session \d+/g)?.length ?? 0;
    return this.waitFor(
      () => lines() >= count,
      timeoutMs,
      `${this.name}'s loops to run (running line ${count})`,
    );
  }

  private async waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    try {
      await waitUntil(check, timeoutMs, what);
    } catch (error) {
      const tail = this.log().split('\n').slice(-15).join('\n');
      throw new Error(`${(error as Error).message}; ${this.name}'s last lines:\n${tail}`, { cause: error });
    }
  }

  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.child.once('exit', () => resolve()));
  }
}

export interface ClusterFixture {
  readonly url: string;
  readonly dir: string;
  readonly store: Store;
  up(host: string, ...extra: string[]): UpProcess;
  /** `up`, with these variables added to its environment. */
  upWithEnv(env: Readonly<Record<string, string>>, host: string, ...extra: string[]): UpProcess;
  /** `up` with baton's own default timings, not the fast ones. */
  upDefault(host: string, ...extra: string[]): UpProcess;
  /**
   * `up` with exactly these arguments after `--host`, started in `cwd` (its own `.baton` state
   * directory: worktrees and logs), with these variables added to its environment.
   */
  upAt(cwd: string, env: Readonly<Record<string, string>>, host: string, args: readonly string[]): UpProcess;
  baton(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

export async function clusterFixture(db: TestDatabase): Promise<ClusterFixture> {
  const url = await db.fresh();
  const dir = mkdtempSync(join(tmpdir(), 'baton-e2e-'));
  const store = await openStore(url);
  const ups: UpProcess[] = [];
  const spawnUp = (
    env: Readonly<Record<string, string>>,
    host: string,
    args: readonly string[],
    cwd = dir,
  ): UpProcess => {
    const logPath = join(dir, `up-${host}-${ups.length}.log`);
    const fd = openSync(logPath, 'a');
    const child = spawn(process.execPath, [BIN, '--db', url, 'up', '--host', host, ...args], {
      cwd,
      stdio: ['ignore', fd, fd],
      env: { ...process.env, ...env },
    });
    const up = new UpProcess(host, child, logPath);
    ups.push(up);
    return up;
  };
  const upWithEnv = (env: Readonly<Record<string, string>>, host: string, ...extra: string[]): UpProcess =>
    spawnUp(env, host, [...FAST_ARGS, ...extra]);
  return {
    url,
    dir,
    store,
    up: (host, ...extra) => upWithEnv({}, host, ...extra),
    upWithEnv,
    upDefault: (host, ...extra) => spawnUp({}, host, extra),
    upAt: (cwd, env, host, args) => spawnUp(env, host, args, cwd),
    baton: (...args) =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [BIN, '--db', url, ...args], { cwd: dir });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
      }),
    close: async () => {
      for (const up of ups) {
        up.signal('SIGCONT');
        up.signal('SIGKILL');
      }
      await Promise.all(ups.map((u) => u.exited()));
      await store.close();
    },
  };
}

/** Whether the process runs (a zombie does not): the takeover's own test of it. */
/** Runs `body` on a fresh cluster fixture on `db`, closed after it whatever happens. */
export async function withCluster(
  db: TestDatabase,
  body: (c: ClusterFixture) => Promise<void>,
): Promise<void> {
  const c = await clusterFixture(db);
  try {
    await body(c);
  } finally {
    await c.close();
  }
}

export const isAlive = processExists;

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * The agent's own processes under a job's pid: its process tree without the Node shim
 * (process-group containment) or the shell that enters the job's cgroup before exec'ing the
 * command (cgroup containment; the pid becomes the agent's once it has).
 */
export function agentPids(jobPid: number): number[] {
  return treeMembers(jobPid).filter((p) => {
    const cmd = cmdline(p);
    return cmd !== '' && !cmd.includes('agent-shim') && !cmd.includes('baton-agent');
  });
}

/** The job of `key` has its agent running. */
export async function agentStarted(store: Store, key: string, atLeast = 1): Promise<boolean> {
  const pid = (await store.jobs.list({ key }))[0]?.pid;
  return pid != null && agentPids(pid).length >= atLeast;
}

/**
 * SIGKILLs the agent of job `id` (task `key`) once it runs, and waits for the job's rerun to end
 * done; the killed run's pid, as its job row recorded it.
 */
export async function killFirstRunAwaitRerun(store: Store, id: number, key: string): Promise<number> {
  await waitUntil(async () => agentStarted(store, key), 15_000, 'the agent to start');
  const pid = (await store.jobs.get(id))?.pid ?? 0;
  for (const agent of agentPids(pid)) process.kill(agent, 'SIGKILL');
  await waitUntil(async () => (await store.jobs.get(id))?.status === 'done', 15_000, 'the rerun to finish');
  return pid;
}

/**
 * SIGSTOP of `up`, but never inside a SQLite write transaction: SQLite has one writer per file, so
 * a process stopped while holding the write lock stalls every other one on the host until it
 * resumes (a documented limit of the embedded engine, see the chaos report), and no failover
 * can happen meanwhile. On PostgreSQL a stopped client holds no lock between its statements.
 */
export function pauseOutsideWriteLock(db: TestDatabase, url: string, up: UpProcess): void {
  for (let attempt = 0; ; attempt++) {
    up.signal('SIGSTOP');
    if (db.engine !== 'sqlite' || writeLockFree(url)) return;
    assert.ok(attempt < 50, 'the paused process always held the SQLite write lock');
    up.signal('SIGCONT');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function writeLockFree(path: string): boolean {
  const probe = new Database(path, { timeout: 200 });
  try {
    probe.exec('BEGIN IMMEDIATE');
    probe.exec('ROLLBACK');
    return true;
  } catch {
    return false;
  } finally {
    probe.close();
  }
}
