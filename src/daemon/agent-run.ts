/**
 * One job on one host, from placement to outcome. Step 0 claims the task before anything is
 * spawned; then the run's workspace is settled (run-workspace.ts): the locked workspace's
 * directory, a git worktree of it for this claim, or the runner's own directory for a cognitive
 * run. The agent runs there in a scope of the host's containment (a cgroup of its own, or the
 * shim's process group; os/containment.ts) while this loop heartbeats the claim, watches the
 * job row and samples the scope's memory. A fenced heartbeat, a cancelled job or a blown RAM
 * budget kills the whole scope at once, and whatever the agent leaves behind when it exits dies
 * with the job. A worktree is retired once the agent has exited and before the outcome is
 * written, since writing it releases the workspace's lock to the next run.
 */
import type { ChildProcess } from 'node:child_process';
import { renderCommand } from '../core/command-template.js';
import { BatonError, TaskStateError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { RetryPolicy } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import type { Containment, JobScope } from '../os/containment.js';
import { killTree } from '../os/process-tree.js';
import { readOomKills } from '../os/memory.js';
import { judgeRun, type KillReason } from '../core/run-verdict.js';
import type { Store } from '../store/store.js';
import { RunProgress, type StallPolicy } from './run-progress.js';
import { spawnAgent } from './agent-process.js';
import { settleWorkspace, type RunDirectory } from './run-workspace.js';

export interface AgentRunOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly host: string;
  readonly runnerSession: number;
  readonly dbUrl: string;
  /** How this host keeps each job's processes together (cgroup or process group). */
  readonly containment: Containment;
  /** Variables (or NAME* prefixes) agents inherit beyond the allowlist (agent-env.ts). */
  readonly agentEnv: readonly string[];
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
  /** When a run with no progress mark is stalled, and what then (run-progress.ts). */
  readonly stall: StallPolicy;
  readonly log: (line: string) => void;
  /** The TTL of the agent's session: the runner's stale threshold (agents heartbeat in seconds). */
  readonly sessionTtlMs?: number | undefined;
}

type Guard = { id: number; session: number; epoch: number };

export class AgentRun {
  private child: ChildProcess | null = null;
  private scope: JobScope | null = null;
  private killedFor: KillReason | null = null;
  private tail = (): string => '';
  private peakRssMb = 0;
  private progress: RunProgress | null = null;
  private oomKills = 0;

  constructor(
    private readonly o: AgentRunOptions,
    readonly job: Job,
  ) {}

  /** Kills the agent's scope (also used when the runner itself is fenced or stops). */
  kill(reason: KillReason): void {
    if (this.child?.pid === undefined || this.killedFor !== null) return;
    this.killedFor = reason;
    this.scope?.kill();
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
      // Making a worktree can take seconds on a busy host: the agent's session beats meanwhile.
      const beat = (): void => void store.sessions.heartbeat({ session: agent.id }).catch(() => null);
      const keepAlive = setInterval(beat, this.o.heartbeatIntervalMs);
      const settled = settleWorkspace(this.o, job, guard, claimRef, release);
      const dir = await settled.finally(() => clearInterval(keepAlive));
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
    guard: Guard,
    dir: RunDirectory,
  ): Promise<void> {
    const { store, clock } = this.o;
    const job = this.job;
    const task = await store.tasks.get(job.key);
    const texts = { title: task?.title ?? '', feedback: task?.feedback ?? '' };
    const workspaceDir = dir.env['BATON_WORKSPACE'] ? dir.path : null;
    const progress = new RunProgress({ ...this.o, job, agentSession, workspaceDir });
    this.progress = progress;
    await progress.baseline();
    const started = await this.start(command, dir, agentSession, claimEpoch, texts, guard);
    if (started === null) return;
    const { child, scope, oomBefore } = started;
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
      this.sampleMemory(scope);
      const mono = clock.monotonicNowMs();
      if (mono - lastBeatMs >= this.o.heartbeatIntervalMs) {
        lastBeatMs = mono;
        if (await this.stillOurs(agentSession, claimEpoch)) lastOkMs = clock.monotonicNowMs();
        const stall = await progress.tick().catch(() => null);
        if (stall === 'kill') this.kill('stalled');
        else if (stall === 'escalate') await this.escalateStall(progress, agentSession, claimEpoch);
      }
    }
    const exit = await exited;
    // Whatever the agent left behind (a setsid child, a daemon it started) ends with the job.
    this.oomKills = Math.max(this.oomKills, scope.oomKills());
    this.peakRssMb = Math.max(this.peakRssMb, scope.peakMb() ?? 0);
    await scope.close();
    await dir.retire();
    await this.report(exit, oomBefore, agentSession, claimEpoch, guard);
  }

  /**
   * Renders the command, makes the job's scope and spawns the agent into it; null when it must
   * not run (a template refused, a scope the host would not make): the job is then ended and
   * the claim released, with the reason.
   */
  private async start(
    template: string,
    dir: RunDirectory,
    agentSession: number,
    claimEpoch: number,
    texts: { readonly title: string; readonly feedback: string },
    guard: Guard,
  ): Promise<{ child: ChildProcess; scope: JobScope; oomBefore: number | null } | null> {
    const job = this.job;
    const release = (): Promise<unknown> =>
      this.o.store.claims.release({
        key: job.key,
        session: agentSession,
        epoch: claimEpoch,
        outcome: 'failed',
      });
    let command: string;
    try {
      command = renderCommand(template);
    } catch (error) {
      // Enqueued before templates were checked: it can never run, so it fails for good.
      if (!(error instanceof BatonError)) throw error;
      const reason = `the command template is refused: ${error.message}; fix: ${error.hint ?? ''}`;
      await this.o.store.jobs.finish({ ...guard, status: 'failed', reason });
      await release();
      this.o.log(`job ${job.id} ${job.key}: failed, ${reason}`);
      return null;
    }
    const scope = this.o.containment.scope(job.id, job.epoch, job.ramMb);
    try {
      scope.create();
    } catch (error) {
      // A host problem, not the job's: back to the queue, under the retry policy.
      const why = error instanceof Error ? error.message : String(error);
      const reason = `${this.o.containment.kind} scope refused: ${why}`;
      await scope.close();
      const r = await this.o.store.dispatch.requeue({ ...guard, reason, policy: this.o.policy });
      await release();
      this.o.log(`job ${job.id} ${job.key}: ${reason}; ${r.ok ? r.job.status : 'lost'}`);
      return null;
    }
    const oomBefore = readOomKills();
    const agent = spawnAgent({
      command,
      cwd: dir.path,
      scope,
      logDir: this.o.logDir,
      logName: `job-${job.id}-attempt-${job.attempt}.log`,
      values: {
        key: job.key,
        title: texts.title,
        feedback: texts.feedback,
        session: agentSession,
        job: job.id,
        epoch: claimEpoch,
        host: this.o.host,
        attempt: job.attempt,
      },
      dbUrl: this.o.dbUrl,
      agentEnv: this.o.agentEnv,
      more: { BATON_JOB_EPOCH: String(job.epoch), BATON_RAM_MB: String(job.ramMb ?? ''), ...dir.env },
      onOutput: (bytes) => this.progress?.output(bytes),
    });
    this.child = agent.child;
    this.scope = scope;
    this.tail = () => agent.tail();
    return { child: agent.child, scope, oomBefore };
  }

  /**
   * Hands a stalled run's task to a human under the agent's claim: the claim and the job end
   * `escalated` in one step, and the run is killed. Fenced means the task is no longer this
   * run's to escalate (stillOurs kills it); a failure leaves the escalation for the next tick.
   */
  private async escalateStall(progress: RunProgress, agentSession: number, claimEpoch: number) {
    try {
      const r = await this.o.store.lifecycle.escalate({
        key: this.job.key,
        reason: progress.reason(),
        by: { name: `runner of job ${this.job.id}`, session: this.o.runnerSession },
        claim: { session: agentSession, epoch: claimEpoch },
      });
      progress.escalated();
      if (r.ok) {
        this.o.log(`job ${this.job.id} ${this.job.key}: stalled, escalated to a human`);
        this.kill('escalated');
      }
    } catch {
      // The database is away: the next tick asks again.
    }
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

  /**
   * Where the kernel enforces the budget (a cgroup with a memory controller), an OOM kill in the
   * scope ends the job at once, as one; elsewhere the scope's RSS is held to the budget here.
   */
  private sampleMemory(scope: JobScope): void {
    const budget = this.job.ramMb;
    const mb = scope.memoryMb();
    this.peakRssMb = Math.max(this.peakRssMb, mb, scope.peakMb() ?? 0);
    if (budget === null || budget <= 0) return;
    if (scope.enforcesMemory) {
      this.oomKills = Math.max(this.oomKills, scope.oomKills());
      if (this.oomKills > 0) this.kill('oom');
    } else if (mb > budget) {
      this.kill('oom');
    }
  }

  private async report(
    exit: { code: number | null; signal: NodeJS.Signals | null },
    oomBefore: number | null,
    agentSession: number,
    claimEpoch: number,
    guard: Guard,
  ): Promise<void> {
    const { store } = this.o;
    const job = this.job;
    const release = (outcome: 'done' | 'failed' | 'released') =>
      store.claims.release({ key: job.key, session: agentSession, epoch: claimEpoch, outcome });
    const log = (line: string): void => this.o.log(`job ${job.id} ${job.key}: ${line}`);
    const verdict = judgeRun({
      killedFor: this.killedFor,
      exit,
      oomInScope: this.oomKills > 0,
      oomOnMachine:
        this.scope?.countsOom !== true &&
        exit.signal === 'SIGKILL' &&
        oomBefore !== null &&
        (readOomKills() ?? 0) > oomBefore,
      peakRssMb: this.peakRssMb,
      budgetMb: job.ramMb,
      containment: this.o.containment.kind,
      stallReason: this.progress?.reason() ?? null,
    });
    if (verdict.kind === 'leave') {
      if (verdict.release !== null) await release(verdict.release);
      return log(verdict.log);
    }
    if (verdict.kind === 'requeue') {
      const r = await store.dispatch.requeue({ ...guard, reason: verdict.reason, policy: this.o.policy });
      await release(verdict.release);
      return log(`${verdict.reason}; ${r.ok ? r.job.status : 'lost'}`);
    }
    const finished = await store.jobs.finish({
      ...guard,
      status: verdict.status,
      exitCode: verdict.exitCode,
      reason: verdict.reason,
      outputTail: verdict.keepTail ? this.tail() : null,
    });
    if (!finished.ok) {
      // Ended meanwhile: the agent escalated the task (`baton escalate`, which ended the claim
      // too), or the task was closed or finished and its job cancelled.
      const why = finished.job === null ? 'gone' : `${finished.job.status}: ${finished.job.reason ?? ''}`;
      await release('released');
      return log(`agent exited ${exit.code ?? exit.signal ?? '?'}, job already ${why}`);
    }
    await release(verdict.release);
    log(verdict.log);
  }
}
