/**
 * One job on one host, from placement to outcome. Step 0 claims the task before anything is spawned;
 * then the run's workspace is settled (run-workspace.ts; a uid seated with --agent-uids): the locked
 * workspace's directory, a git worktree of it for this claim, or the runner's own directory for a
 * cognitive run. The agent runs there in a scope of the host's containment (a cgroup, or the shim's
 * process group) while this loop heartbeats the claim, watches the job row (claim-watch.ts) and
 * samples the scope's memory. A fenced heartbeat, a cancelled job, a blown RAM budget or a run past
 * its time limit (run-limit.ts) kills the whole scope at once, and what the agent leaves behind
 * dies with the job. A worktree is retired after the agent's exit and before the outcome is written,
 * which releases the workspace's lock. A `recheck` (run-recheck.ts) may cancel the run. The run's
 * end is judged and written by run-report.ts.
 */
import { assert } from '../core/assert.js';
import { renderCommand } from '../core/command-template.js';
import { BatonError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { every } from '../core/time.js';
import { afterPendingIo } from './pending-io.js';
import type { JobScope } from '../os/containment.js';
import { killTree } from '../os/process-tree.js';
import { readOomKills } from '../os/memory.js';
import { ClaimWatch } from './claim-watch.js';
import type { KillReason } from '../core/run-verdict.js';
import { RunProgress } from './run-progress.js';
import { RunLimit } from './run-limit.js';
import { prepareScope, spawnAgent, type AgentChild, type AgentProcess } from './agent-process.js';
import type { EarlyScope } from './agent-process.js';
import type { AgentReach } from './agent-token.js';
import type { RunDirectory } from './run-workspace.js';
import { recheckBeforeRun } from './run-recheck.js';
import { beginRun, prepareRun, type BeginCall, type TaskTexts } from './run-start.js';
import { LOG_MAX_MB_DEFAULT, logClosedWithin } from './job-log.js';
import { jobLogName } from '../core/job-log.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { reportNotStarted, reportRun, type Exit, type Guard, type RunEnd } from './run-report.js';

export class AgentRun {
  private child: AgentChild | null = null;
  private scope: JobScope | null = null;
  private killedFor: KillReason | null = null;
  private agent: AgentProcess | null = null;
  private peakRssMb = 0;
  private progress: RunProgress | null = null;
  private oomKills = 0;
  private reach: AgentReach | null = null;
  private early: EarlyScope | null = null;
  /** Killed by its runner's own fence: an agent that had exited 0 keeps its success (run-verdict.ts). */
  private underRunnerFence = false;
  /** Why its agent must not start: the runner stopped, drained or was fenced before the spawn. */
  private heldBack: 'shutdown' | 'fenced' | null = null;
  private readonly limit: RunLimit;

  constructor(
    private readonly options: AgentRunOptions,
    readonly job: Job,
    private readonly begin?: BeginCall,
  ) {
    this.limit = new RunLimit({ ...options, job });
  }

  /**
   * Kills the agent's scope (also when the runner itself is fenced or stops). `why` names what
   * decided it (a watchdog, a refused beat, the job as read), logged at once: the run's end is
   * logged only after its worktree is retired, seconds later on a busy host.
   */
  kill(reason: KillReason, why?: string, byRunner = false): void {
    if (this.child === null && (reason === 'shutdown' || reason === 'fenced')) this.holdBack(reason);
    if (this.child?.pid === undefined || this.killedFor !== null) return;
    this.killedFor = reason;
    this.underRunnerFence = byRunner; // only when the runner's fence is what killed it
    if (why !== undefined)
      this.options.log(`job ${this.job.id} ${this.job.key}: killing its agent (${reason}: ${why})`);
    this.scope?.kill();
    killTree(this.child.pid);
  }

  /** The runner stops or is fenced as this run starts: no agent (run-report.ts reportNotStarted). */
  holdBack(reason: 'shutdown' | 'fenced'): boolean {
    if (this.child !== null) return false;
    this.heldBack ??= reason;
    return true;
  }

  async run(): Promise<void> {
    const job = this.job;
    const guard = { id: job.id, session: this.options.runnerSession, epoch: job.epoch };
    if (job.command === null && this.options.defaultCommand === null) return await this.giveBack(guard);
    if (!(await recheckBeforeRun(this.options, job, guard))) return;
    // While the start, session and claim are in flight, the agent's process enters the job's cgroups.
    const starting = beginRun(this.options, job, guard, this.begin);
    starting.catch(() => undefined); // awaited below: not an unhandled rejection meanwhile
    try {
      this.early = await prepareScope(this.options.containment, job);
      await this.runGuarded(guard, await starting);
    } finally {
      if (this.child === null && this.early !== null) {
        this.early.waiting?.cancel();
        await this.early.scope.close();
      }
    }
  }

  private async runGuarded(guard: Guard, begun: Awaited<ReturnType<typeof beginRun>>): Promise<void> {
    const { store } = this.options;
    const job = this.job;
    if (begun === null) return;
    const agent = begun.session;
    // A worktree takes seconds to make or retire on a busy host, and the loop below beats only while the
    // agent runs: the session beats on its own timer throughout (liveness); the claim's (stillOurs) proves it ours.
    const beat = (): void => void store.sessions.heartbeat({ session: agent.id }).catch(() => null);
    const keepAlive = new AbortController();
    const beating = every(this.options.clock, this.options.heartbeatIntervalMs, beat, keepAlive.signal);
    this.reach = begun.reach; // minted with the claim, or null: closed in the finally below
    try {
      const claim = begun.claim;
      if (claim === null) return;
      const command = job.command ?? this.options.defaultCommand;
      assert(command !== null, `job ${job.id}: a job without a command was given back before its start`);
      const claimEpoch = claim.epoch;
      if (this.heldBack !== null)
        return await reportNotStarted(this.options, job, this.heldBack, guard, agent.id, claimEpoch);
      const ref = { session: agent.id, key: job.key, epoch: claimEpoch };
      const prepared = await prepareRun(this.options, job, guard, ref, this.reach, begun.reads);
      if (prepared.reach !== null) this.reach = prepared.reach; // closed in the finally below
      if (prepared.run === null) return;
      const { dir, texts } = prepared.run;
      try {
        await this.supervise(command, agent.id, claimEpoch, guard, dir, texts);
      } finally {
        await this.options.output?.end(job); // when supervise threw too (a second end() does nothing)
        await dir.retire(); // idempotent: supervise retires it before reporting
      }
    } finally {
      // The agent's tree is dead (or never spawned): the run's lock can go, if a cancel left it to
      // this (else it goes with this runner's session); its token is revoked before its session ends.
      await store.workspaceLocks
        .releaseJob({ jobId: job.id, session: this.options.runnerSession })
        .catch((error: unknown) =>
          this.options.log(`job ${job.id} ${job.key}: lock not released: ${String(error)}`),
        );
      keepAlive.abort();
      await beating;
      await this.reach?.close();
      await store.sessions.end(agent.id);
    }
  }

  /**
   * A job without a command placed on this runner, which has no agent command: its host row said
   * otherwise when it was placed (decision 0047: a row not registered again since the migration, or a placement racing
   * this runner's register). Before it is started or its task claimed, it goes back to the queue
   * at once with its attempt given back (guarded by its epoch): no agent ran, so no attempt is
   * spent, and the next pass places it on a host that has one, or says why it waits.
   */
  private async giveBack(guard: Guard): Promise<void> {
    const reason =
      `no agent command on ${this.options.host}: ` +
      'start baton up with --agent-command, or enqueue with --command';
    const given = await this.options.store.dispatch.requeue({
      ...guard,
      reason,
      policy: this.options.policy,
      attemptCounts: false,
    });
    this.options.log(
      `job ${this.job.id} ${this.job.key}: not run, ${reason}${given.ok ? '; given back' : ''}`,
    );
  }

  private async supervise(
    command: string,
    agentSession: number,
    claimEpoch: number,
    guard: Guard,
    dir: RunDirectory,
    texts: TaskTexts,
  ): Promise<void> {
    const { store, clock } = this.options;
    const job = this.job;
    const progress = await this.startProgress(agentSession, dir);
    if (this.heldBack !== null)
      return await reportNotStarted(this.options, job, this.heldBack, guard, agentSession, claimEpoch);
    const started = await this.start(command, dir, agentSession, claimEpoch, texts, guard);
    if (started === null) return;
    // Held back before (its worktree took seconds: no scope made) or while it spawned: killed at once.
    if (this.heldBack !== null) this.kill(this.heldBack, 'its runner stopped while it started');
    const { child, scope, oomBefore } = started;
    this.options.output?.watch(job); // its log is open, a foreign file of its name set aside
    const exited = new Promise<Exit>((done) => child.on('exit', (code, signal) => done({ code, signal })));
    let done = false;
    const ours = new ClaimWatch({
      store,
      clock,
      job,
      agentSession,
      claimEpoch,
      kill: (reason, why) => this.kill(reason, why),
    });
    const watching = this.watchTrust(ours, exited);
    void exited.then(() => (done = true));
    await store.dispatch.attach({ ...guard, agentSession, pid: child.pid ?? 0 });
    this.options.log(
      `job ${job.id} ${job.key}: running as pid ${child.pid ?? '?'} (claim epoch ${claimEpoch}) in ${dir.path}`,
    );
    let lastBeatMs = -Infinity;
    let judging: Promise<void> | null = null;
    while (!done) {
      await Promise.race([exited, clock.sleep(this.options.sampleIntervalMs)]);
      if (done) break;
      this.sampleMemory(scope, child.pid);
      const mono = clock.monotonicNowMs();
      if (mono - lastBeatMs >= this.options.heartbeatIntervalMs) {
        lastBeatMs = mono;
        // Beside the sampling: a store waiting out a lock must not stop RAM kills (issue 14, item 8).
        ours.beat();
        // Progress runs git in the worktree, slow on a busy host: it must never delay a beat.
        judging ??= this.judgeProgress(progress, claimEpoch).finally(() => (judging = null));
      }
    }
    if (child.pid !== undefined) this.options.memoryByPid?.delete(child.pid);
    await ours.settled();
    await judging;
    await progress.flush();
    await watching;
    const exit = await exited;
    await logClosedWithin(this.agent?.logClosed(), clock, job, this.options.log);
    await this.options.output?.end(job); // its last output in the database before its end is reported
    await this.closeScope(scope);
    await dir.retire();
    await this.report({ exit, oomBefore, agentSession, claimEpoch, guard });
  }

  /** Hands what this run saw to run-report.ts, which judges it and writes the job's end. */
  private report(seen: Pick<RunEnd, 'exit' | 'oomBefore' | 'agentSession' | 'claimEpoch' | 'guard'>) {
    return reportRun(this.options, this.job, {
      ...seen,
      killedFor: this.killedFor,
      runnerFenced: this.underRunnerFence,
      oomKills: this.oomKills,
      peakRssMb: this.peakRssMb,
      scopeCountsOom: this.scope?.countsOom === true,
      stallReason: this.progress?.reason() ?? null,
      timeoutReason: this.limit.reason(),
      agent: this.agent,
    });
  }

  /**
   * The trust window has a timer of its own: a store call that hangs on a silent connection must
   * not keep the agent alive past it while recovery hands the task to someone else. Resolves once
   * the agent has exited.
   */
  private watchTrust(ours: ClaimWatch, exited: Promise<unknown>): Promise<void> {
    const { clock, trustMs } = this.options;
    const watchdog = new AbortController();
    let over = false;
    void exited.then(() => {
      over = true;
      watchdog.abort();
    });
    const silentMs = (): number => clock.monotonicNowMs() - ours.lastOkMs;
    const look = (): void => {
      if (silentMs() <= trustMs) return;
      // Judged after the answers that came in meanwhile are read (afterPendingIo).
      void afterPendingIo().then(() => {
        if (this.killedFor === null && !over && silentMs() > trustMs)
          this.kill('fenced', ours.silence(silentMs()));
      });
    };
    return every(clock, Math.min(250, this.options.heartbeatIntervalMs), look, watchdog.signal);
  }

  /** The run's progress watch, its baseline taken before the agent starts. */
  private async startProgress(agentSession: number, dir: RunDirectory): Promise<RunProgress> {
    const workspaceDir = dir.env['BATON_WORKSPACE'] ? dir.path : null;
    const gitAs = dir.identity;
    const progress = new RunProgress({ ...this.options, job: this.job, agentSession, workspaceDir, gitAs });
    this.progress = progress;
    await progress.baseline();
    return progress;
  }

  /** Takes the scope's last figures, then closes it. */
  private async closeScope(scope: JobScope): Promise<void> {
    this.oomKills = Math.max(this.oomKills, scope.oomKills());
    this.peakRssMb = Math.max(this.peakRssMb, scope.peakMb() ?? 0);
    // Whatever the agent left behind (a setsid child, a daemon it started) ends with the job.
    await scope.close();
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
    texts: TaskTexts,
    guard: Guard,
  ): Promise<{ child: AgentChild; scope: JobScope; oomBefore: number | null } | null> {
    const job = this.job;
    const claim = { key: job.key, session: agentSession, epoch: claimEpoch, outcome: 'failed' as const };
    const release = (): Promise<unknown> => this.options.store.claims.release(claim);
    let command: string;
    try {
      command = renderCommand(template);
    } catch (error) {
      // Enqueued before templates were checked: it can never run, so it fails for good.
      if (!(error instanceof BatonError)) throw error;
      const reason = `the command template is refused: ${error.message}; fix: ${error.hint ?? ''}`;
      await this.options.store.jobs.finish({ ...guard, status: 'failed', reason });
      await release();
      this.options.log(`job ${job.id} ${job.key}: failed, ${reason}`);
      return null;
    }
    const scope = this.early?.scope ?? this.options.containment.scope(job.id, job.epoch, job.ramMb);
    try {
      if (this.early === null) scope.create();
    } catch (error) {
      // A host problem, not the job's: back to the queue, under the retry policy.
      const why = error instanceof Error ? error.message : String(error);
      const reason = `${this.options.containment.kind} scope refused: ${why}`;
      await scope.close();
      const { store, policy } = this.options;
      const result = await store.dispatch.requeue({ ...guard, reason, policy });
      await release();
      this.options.log(`job ${job.id} ${job.key}: ${reason}; ${result.ok ? result.job.status : 'lost'}`);
      return null;
    }
    const oomBefore = readOomKills();
    const agent = await spawnAgent({
      command,
      cwd: dir.path,
      scope,
      logDir: this.options.logDir,
      logName: jobLogName(job),
      queuedAt: job.queuedAt,
      logMaxBytes: this.options.logMaxBytes ?? LOG_MAX_MB_DEFAULT * 1024 * 1024,
      onLogProblem: (problem) => this.options.log(`job ${job.id} ${job.key}: ${problem}; the job goes on`),
      values: {
        key: job.key,
        ...texts,
        session: agentSession,
        job: job.id,
        epoch: claimEpoch,
        host: this.options.host,
        attempt: job.attempt,
      },
      dbUrl: this.options.dbUrl,
      api: this.reach?.api,
      agentEnv: this.options.agentEnv,
      more: { BATON_JOB_EPOCH: String(job.epoch), BATON_RAM_MB: String(job.ramMb ?? ''), ...dir.env },
      onOutput: (bytes) => this.progress?.output(bytes),
      waiting: this.early?.waiting,
      identity: dir.identity,
    });
    this.child = agent.child;
    this.scope = scope;
    this.agent = agent;
    return { child: agent.child, scope, oomBefore };
  }

  /** The run's time limit first (run-limit.ts), then its progress: both judged on the database clock. */
  private async judgeProgress(progress: RunProgress, claimEpoch: number): Promise<void> {
    if (this.killedFor === null && (await this.limit.tick())) return this.kill('timed_out');
    const stall = await progress.tick().catch(() => null);
    if (stall === 'kill') this.kill('stalled');
    else if (stall === 'escalate' && (await progress.escalate(claimEpoch))) this.kill('escalated');
  }

  /**
   * Where the kernel enforces the budget (a cgroup with a memory controller), an OOM kill in the
   * scope ends the job at once, as one; elsewhere the scope's RSS is held to the budget here.
   */
  private sampleMemory(scope: JobScope, pid: number | undefined): void {
    const budget = this.job.ramMb;
    const mb = scope.memoryMb();
    if (pid !== undefined) this.options.memoryByPid?.set(pid, Math.round(mb));
    this.peakRssMb = Math.max(this.peakRssMb, mb, scope.peakMb() ?? 0);
    if (budget === null || budget <= 0) return;
    if (scope.enforcesMemory) {
      this.oomKills = Math.max(this.oomKills, scope.oomKills());
      if (this.oomKills > 0) this.kill('oom');
    } else if (mb > budget) {
      this.kill('oom');
    }
  }
}
