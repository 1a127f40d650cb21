/**
 * One job on one host, from placement to outcome. Step 0 claims the task before anything is
 * spawned; then the run's workspace is settled (run-workspace.ts): the locked workspace's
 * directory, a git worktree of it for this claim, or the runner's own directory for a cognitive
 * run. The agent runs there under the shim (its own process group, dying with the runner) while
 * this loop heartbeats the claim, watches the job row and samples the tree's RSS. A fenced
 * heartbeat, a cancelled job or a blown RAM budget kills the whole tree at once. A worktree is
 * retired once the agent has exited and before the outcome is written, since writing it
 * releases the workspace's lock to the next run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { renderCommand, templateEnvironment } from '../core/command-template.js';
import type { Job } from '../core/job.js';
import { TaskStateError } from '../core/errors.js';
import type { RetryPolicy } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import { killTree, treeRssMb } from '../os/process-tree.js';
import { readOomKills } from '../os/memory.js';
import type { Store } from '../store/store.js';
import { settleWorkspace, type RunDirectory } from './run-workspace.js';

export interface AgentRunOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly host: string;
  readonly runnerSession: number;
  readonly dbUrl: string;
  readonly shimPath: string;
  readonly logDir: string;
  readonly defaultCommand: string | null;
  readonly heartbeatIntervalMs: number;
  readonly sampleIntervalMs: number;
  /** Without a successful heartbeat for this long, the agent is presumed fenced and killed. */
  readonly trustMs: number;
  /** Where cognitive runs (lock mode none) run: the runner's own directory. */
  readonly cwd: string;
  /** Where the worktrees of `worktree` workspaces are made, one per claim. */
  readonly worktreeDir: string;
  readonly policy: RetryPolicy;
  readonly log: (line: string) => void;
  /** The TTL of the agent's session: the runner's stale threshold (agents heartbeat in seconds). */
  readonly sessionTtlMs?: number | undefined;
}

type KillReason = 'fenced' | 'cancelled' | 'escalated' | 'oom' | 'shutdown';
const TAIL_CHARS = 4000;

export class AgentRun {
  private child: ChildProcess | null = null;
  private killedFor: KillReason | null = null;
  private tail = '';
  private peakRssMb = 0;

  constructor(
    private readonly o: AgentRunOptions,
    readonly job: Job,
  ) {}

  /** Kills the agent's tree (used when the runner itself is fenced or stops). */
  kill(reason: KillReason): void {
    if (this.child?.pid === undefined || this.killedFor !== null) return;
    this.killedFor = reason;
    killTree(this.child.pid);
  }

  async run(): Promise<void> {
    const { store } = this.o;
    const job = this.job;
    const guard = { id: job.id, session: this.o.runnerSession, epoch: job.epoch };
    const started = await store.jobs.start(guard);
    if (!started.ok) return;
    const agent = await store.sessions.start({
      kind: 'agent',
      host: this.o.host,
      pid: process.pid,
      name: `job ${job.id}`,
      ttlMs: this.o.sessionTtlMs,
    });
    try {
      const claim = await store.claims
        .acquire({ key: job.key, session: agent.id })
        .catch(async (e: unknown) => {
          // The task left `open` after the placement (closed, escalated, done): its job was ended
          // with it, so this finish is refused; nothing runs.
          if (!(e instanceof TaskStateError)) throw e;
          await store.jobs.finish({ ...guard, status: 'cancelled', reason: e.message });
          this.o.log(`job ${job.id} ${job.key}: not run, ${e.message}`);
          return null;
        });
      if (claim === null) return;
      if (!claim.ok) {
        const h = claim.holder;
        const reason = `task held by session ${h.session} on ${h.host} since ${new Date(h.since).toISOString()}`;
        await store.jobs.finish({ ...guard, status: 'cancelled', reason });
        this.o.log(`job ${job.id} ${job.key}: cancelled, ${reason}`);
        return;
      }
      const command = job.command ?? this.o.defaultCommand;
      if (command === null) {
        const reason = 'no agent command: enqueue with --command, or start baton up with --agent-command';
        await store.jobs.finish({ ...guard, status: 'failed', reason });
        await store.claims.release({
          key: job.key,
          session: agent.id,
          epoch: claim.claim.epoch,
          outcome: 'failed',
        });
        return;
      }
      const claimEpoch = claim.claim.epoch;
      const release = (outcome: 'failed' | 'released') =>
        store.claims.release({ key: job.key, session: agent.id, epoch: claimEpoch, outcome });
      const claimRef = { session: agent.id, key: job.key, epoch: claimEpoch };
      const dir = await settleWorkspace(this.o, job, guard, claimRef, release);
      if (dir === null) return;
      try {
        await this.supervise(command, agent.id, claimEpoch, guard, dir);
      } finally {
        await dir.retire(); // idempotent: supervise retires it before reporting
      }
    } finally {
      // The agent's tree is dead by now (or was never spawned): the run's workspace lock can go.
      // Usually the job's finish or requeue released it already; a cancel of a running job left
      // it to this. Should this fail, the lock goes with this runner's session.
      await store.workspaceLocks
        .releaseJob({ jobId: job.id, session: this.o.runnerSession })
        .catch((error: unknown) =>
          this.o.log(`job ${job.id} ${job.key}: lock not released: ${String(error)}`),
        );
      await store.sessions.end(agent.id);
    }
  }

  private async supervise(
    command: string,
    agentSession: number,
    claimEpoch: number,
    guard: { id: number; session: number; epoch: number },
    dir: RunDirectory,
  ): Promise<void> {
    const { store, clock } = this.o;
    const job = this.job;
    const task = await store.tasks.get(job.key);
    const oomBefore = readOomKills();
    const child = this.spawnAgent(command, dir, {
      key: job.key,
      title: task?.title ?? '',
      feedback: task?.feedback ?? '',
      session: agentSession,
      job: job.id,
      epoch: claimEpoch,
      host: this.o.host,
      attempt: job.attempt,
    });
    this.child = child;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    let done = false;
    let lastOkMs = clock.monotonicNowMs();
    // The trust window has a timer of its own: a store call that hangs on a silent connection
    // must not keep the agent alive past it while recovery hands the task to someone else.
    const watchdog = setInterval(
      () => {
        if (this.killedFor === null && clock.monotonicNowMs() - lastOkMs > this.o.trustMs)
          this.kill('fenced');
      },
      Math.min(250, this.o.heartbeatIntervalMs),
    );
    void exited.then(() => {
      done = true;
      clearInterval(watchdog);
    });
    await store.dispatch.attach({ ...guard, agentSession, pid: child.pid ?? 0 });
    this.o.log(
      `job ${job.id} ${job.key}: running as pid ${child.pid ?? '?'} (claim epoch ${claimEpoch}) in ${dir.path}`,
    );

    let lastBeatMs = -Infinity;
    while (!done) {
      await Promise.race([exited, clock.sleep(this.o.sampleIntervalMs)]);
      if (done) break;
      this.sampleRss();
      const mono = clock.monotonicNowMs();
      if (mono - lastBeatMs >= this.o.heartbeatIntervalMs) {
        lastBeatMs = mono;
        if (await this.stillOurs(agentSession, claimEpoch)) lastOkMs = clock.monotonicNowMs();
      }
    }
    const exit = await exited;
    await dir.retire();
    await this.report(exit, oomBefore, agentSession, claimEpoch, guard);
  }

  /** Heartbeats the claim and reads the job; kills the tree when either says it is no longer ours. */
  private async stillOurs(agentSession: number, claimEpoch: number): Promise<boolean> {
    try {
      const hb = await this.o.store.sessions.heartbeat({
        session: agentSession,
        claim: { key: this.job.key, epoch: claimEpoch },
      });
      const job = await this.o.store.jobs.get(this.job.id);
      if (job?.status === 'escalated') this.kill('escalated');
      else if (!hb.ok) this.kill('fenced');
      else if (job?.status === 'cancelled') this.kill('cancelled');
      else if (job === null || job.epoch !== this.job.epoch || job.status !== 'running') this.kill('fenced');
      return hb.ok;
    } catch {
      return false; // The database is unreachable; the trust window decides.
    }
  }

  private sampleRss(): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    const rss = treeRssMb(pid, [pid]);
    this.peakRssMb = Math.max(this.peakRssMb, rss);
    const budget = this.job.ramMb;
    if (budget !== null && budget > 0 && rss > budget) this.kill('oom');
  }

  private async report(
    exit: { code: number | null; signal: NodeJS.Signals | null },
    oomBefore: number | null,
    agentSession: number,
    claimEpoch: number,
    guard: { id: number; session: number; epoch: number },
  ): Promise<void> {
    const { store } = this.o;
    const job = this.job;
    const release = (outcome: 'done' | 'failed' | 'released') =>
      store.claims.release({ key: job.key, session: agentSession, epoch: claimEpoch, outcome });
    const rss = Math.round(this.peakRssMb);
    if (this.killedFor === 'fenced' || this.killedFor === 'shutdown') {
      // Fenced: the job is no longer ours to report on. Shutdown: the runner's session ends and
      // recovery requeues the job. Either way nothing is reported, least of all success.
      if (this.killedFor === 'shutdown') await release('released');
      this.o.log(`job ${job.id} ${job.key}: agent killed (${this.killedFor})`);
      return;
    }
    if (this.killedFor === 'cancelled') {
      await release('released');
      this.o.log(`job ${job.id} ${job.key}: cancelled, process tree killed`);
      return;
    }
    if (this.killedFor === 'escalated') {
      this.o.log(`job ${job.id} ${job.key}: escalated to a human, process tree killed`);
      return;
    }
    const kernelOom = exit.signal === 'SIGKILL' && oomBefore !== null && (readOomKills() ?? 0) > oomBefore;
    if (this.killedFor === 'oom' || kernelOom) {
      const reason = kernelOom
        ? 'killed by the kernel OOM killer'
        : `RSS ${rss} MB passed the ${job.ramMb ?? 0} MB budget`;
      await store.jobs.finish({ ...guard, status: 'oom_killed', reason, outputTail: this.tail });
      await release('failed');
      this.o.log(`job ${job.id} ${job.key}: oom_killed, ${reason}`);
      return;
    }
    if (exit.signal !== null) {
      // A crash, not a verdict: nobody here sent that signal. Retry under the policy.
      const reason = `agent killed by ${exit.signal}`;
      const r = await store.dispatch.requeue({ ...guard, reason, policy: this.o.policy });
      await release('failed');
      this.o.log(`job ${job.id} ${job.key}: ${reason}; ${r.ok ? r.job.status : 'lost'}`);
      return;
    }
    const exitCode = exit.code ?? 128;
    const ok = exit.code === 0;
    const finished = await store.jobs.finish({
      ...guard,
      status: ok ? 'done' : 'failed',
      exitCode,
      reason: ok ? null : `exit code ${exitCode}`,
      outputTail: ok ? null : this.tail,
    });
    if (!finished.ok) {
      // Ended meanwhile: the agent escalated the task (`baton escalate`, which ended the claim
      // too), or the task was closed or finished and its job cancelled.
      const why = finished.job === null ? 'gone' : `${finished.job.status}: ${finished.job.reason ?? ''}`;
      await release('released');
      this.o.log(`job ${job.id} ${job.key}: agent exited ${exitCode}, job already ${why}`);
      return;
    }
    await release(ok ? 'done' : 'failed');
    this.o.log(`job ${job.id} ${job.key}: ${ok ? 'done' : `failed (exit code ${exitCode})`}`);
  }

  private spawnAgent(
    command: string,
    dir: RunDirectory,
    values: Parameters<typeof templateEnvironment>[0],
  ): ChildProcess {
    mkdirSync(this.o.logDir, { recursive: true });
    const logFile = createWriteStream(
      join(this.o.logDir, `job-${this.job.id}-attempt-${this.job.attempt}.log`),
    );
    const child = spawn(process.execPath, [this.o.shimPath, String(process.pid), renderCommand(command)], {
      cwd: dir.path,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...templateEnvironment(values),
        BATON_DB: this.o.dbUrl,
        BATON_JOB_EPOCH: String(this.job.epoch),
        BATON_RAM_MB: String(this.job.ramMb ?? ''),
        ...dir.env,
      },
    });
    const collect = (chunk: Buffer): void => {
      logFile.write(chunk);
      this.tail = (this.tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.on('exit', () => logFile.end());
    return child;
  }
}
