/**
 * One runner per host: it reports the host's free RAM with its heartbeat, picks up the jobs the
 * dispatcher placed on it, and supervises each as an AgentRun. When its own heartbeat is refused
 * (the session was declared stale while it was paused or cut off), it kills every agent at once
 * and reports `fenced`, so the service can rejoin under a new session.
 */
import { EventEmitter } from 'node:events';
import { assert } from '../core/assert.js';
import { heartbeatWindows } from '../core/heartbeat-windows.js';
import type { Job } from '../core/job.js';
import { databaseFault } from './database-fault.js';
import { readMemory } from '../os/memory.js';
import { readDisk } from '../os/disk.js';
import { AgentRun } from './agent-run.js';
import type { AgentRunOptions } from './agent-run-options.js';
import { OutputStreamer } from './output-stream.js';
import { OUTPUT_FLUSH_MS } from '../core/output-stream.js';
import { agentSessionName, type BeginCall } from './run-start.js';
import type { TermRef } from '../store/dispatch-store.js';
import { Nap } from './nap.js';
import { afterPendingIo } from './pending-io.js';
import { jobLogName } from '../core/job-log.js';

/** How long runner.stop waits for its killed runs' ends. */
const STOP_GRACE_MS = 15_000;

export interface RunnerOptions extends Omit<AgentRunOptions, 'runnerSession' | 'trustMs'> {
  readonly session: number;
  readonly pollIntervalMs: number;
  /** A session silent for longer than this is declared stale by recovery. */
  readonly staleAfterMs: number;
}

export interface RunnerEvents {
  /** Why, in words: ended by someone else, declared stale, or the database failing (issue 14, item 12). */
  fenced: [why: string];
  /** A loop's failure (a heartbeat, a poll: the database's, mostly), or `run`'s alone. */
  failed: [error: unknown, run?: Job];
  /** A heartbeat got through: the database answers (after `failed`, it works again). */
  beat: [];
  /** A look for the jobs placed on this runner returned (draining, it looks no more). */
  polled: [];
  /** A run ended, however (its job done, failed, requeued or lost), and left the runner. */
  ended: [job: Job];
}

export class Runner extends EventEmitter<RunnerEvents> {
  private readonly runs = new Map<number, { run: AgentRun; done: Promise<void> }>();
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly pollNap = new Nap();
  private lastHeartbeatOkMs: number;
  /** The last heartbeat's error since the last success: the cause to name when trust runs out. */
  private lastError: unknown = null;
  /** Draining: it starts nothing more, while its heartbeats, flushes and runs go on (drain.ts). */
  private draining = false;
  /** Draining with its host marked or being marked: each poll gives back what is placed here. */
  private givingBack = false;
  /** Whether the host's drain mark got through (true even when it found the host disabled). */
  private marked = false;
  /** The runs a fence killed, when one did: a drain then ends by the fence. */
  private fencedRuns: number | null = null;

  /** Each run's new output, copied to the database every OUTPUT_FLUSH_MS (output-stream.ts). */
  private readonly output: OutputStreamer;

  constructor(private readonly options: RunnerOptions) {
    super();
    this.lastHeartbeatOkMs = options.clock.monotonicNowMs();
    this.output = new OutputStreamer({ ...options, session: options.session });
  }

  get active(): number {
    return this.runs.size;
  }

  /** Whether a log file is a running job's: the log pruner leaves those (log-pruner.ts). */
  readonly logsInUse = (name: string): boolean =>
    [...this.runs.values()].some(({ run }) => jobLogName(run.job) === name);

  start(): void {
    if (this.loops.length > 0) return;
    this.loops = [
      this.every(this.options.heartbeatIntervalMs, () => this.heartbeat()),
      this.every(this.options.pollIntervalMs, () => this.poll(), this.pollNap),
      // The trust window is checked by a loop of its own on the injected clock, not when a
      // heartbeat returns: a call that hangs on a silent connection must not keep agents alive.
      this.every(Math.min(250, this.options.heartbeatIntervalMs), () => this.watch()),
      this.every(OUTPUT_FLUSH_MS, () => this.output.flush()),
    ];
  }

  private async watch(): Promise<void> {
    const silent = (): boolean =>
      this.options.clock.monotonicNowMs() - this.lastHeartbeatOkMs > this.trustMs();
    if (!silent()) return;
    await afterPendingIo(); // judged after the answers that came in meanwhile are read
    if (silent()) this.fence(this.silence());
  }

  /** Our session can no longer be trusted: kill every agent at once and report it, once. */
  fence(why: string): void {
    if (this.abort.signal.aborted) return;
    this.fencedRuns = this.runs.size;
    for (const { run } of this.runs.values()) run.kill('fenced', `its runner was fenced: ${why}`, true);
    this.abort.abort();
    this.emit('fenced', why);
  }

  /** Why no heartbeat counted for the whole trust window: the database's error, or no answer. */
  private silence(): string {
    const seconds = ((this.options.clock.monotonicNowMs() - this.lastHeartbeatOkMs) / 1000).toFixed(1);
    const cause =
      this.lastError === null
        ? 'a heartbeat call did not answer'
        : `the database failed: ${databaseFault(this.lastError)}`;
    return `no heartbeat of this host reached the database for ${seconds} s (${cause})`;
  }

  /** Why the database refused our heartbeat: who ended the session, or recovery declaring it stale. */
  private async refusal(): Promise<string> {
    const session = await this.options.store.sessions.get(this.options.session).catch(() => null);
    if (session?.state === 'ended') {
      const by = 'someone else (baton session end, or a force-release of it)';
      return `its session ${this.options.session} was ended by ${by}`;
    }
    if (session?.state === 'stale') {
      const over = `no heartbeat for over ${this.options.staleAfterMs / 1000} s`;
      return `its session ${this.options.session} was declared stale by the leader's recovery (${over})`;
    }
    return `the database refused the heartbeat of session ${this.options.session}`;
  }

  /** Starts nothing more, kills (a starting run never spawns), waits ≤ graceMs beating, stops; → runs left. */
  async stop(killAgents: boolean, graceMs = STOP_GRACE_MS): Promise<number> {
    this.draining = true;
    if (killAgents) for (const { run } of this.runs.values()) run.kill('shutdown');
    const timer = new AbortController();
    await Promise.race([this.idle(), this.options.clock.sleep(graceMs, timer.signal)]);
    timer.abort();
    const left = this.runs.size;
    this.abort.abort();
    await Promise.all(this.loops);
    return left;
  }

  /** How many runs a fence killed, or null when the runner was not fenced. */
  get killedByFence(): number | null {
    return this.fencedRuns;
  }

  /**
   * Starts nothing more: no placed job is picked up and a placement of this process's dispatcher
   * is refused. Heartbeats, output flushes and the running agents go on as before.
   */
  drain(): void {
    this.draining = true;
    // A run still starting (its job placed and claimed, its worktree in the making) never spawns.
    for (const { run } of this.runs.values()) run.holdBack('shutdown');
  }

  /**
   * Marks the host draining in the store (hosts.drain: disabled, so no dispatcher places on it);
   * resolves with whether it changed it (false: already disabled). Rejects when the store failed:
   * the poll then tries again while the runner drains.
   */
  async markDraining(): Promise<boolean> {
    const changed = await this.options.store.hosts.drain({
      name: this.options.host,
      session: this.options.session,
    });
    this.marked = true;
    return changed;
  }

  /**
   * Gives the jobs placed here and not started back to the queue, their attempt given back, the
   * host marked draining first; from now on each poll does it again. Resolves with how many.
   * `say`: a line per job given back and for a mark that got through (the poll's; the drain's
   * first give-back is counted in its start line).
   */
  async giveBackPlaced(reason: string, say = false): Promise<number> {
    this.givingBack = true;
    const placed = await this.options.store.dispatch.assigned(this.options.session);
    const back = placed.filter((job) => !this.runs.has(job.id));
    if (!this.marked || (say && back.length > 0)) {
      const was = this.marked;
      if ((await this.markDraining()) && say) {
        const again = was ? ' again: it had been enabled' : '';
        this.options.log(`draining: host ${this.options.host} marked draining${again}`);
      }
    }
    let given = 0;
    for (const job of back) {
      const guard = { id: job.id, session: this.options.session, epoch: job.epoch };
      const { policy } = this.options;
      const result = await this.options.store.dispatch.requeue({
        ...guard,
        reason,
        policy,
        attemptCounts: false,
      });
      if (!result.ok) continue;
      given++;
      if (say)
        this.options.log(`draining: job ${job.id} ${job.key} was placed here: given back to the queue`);
    }
    return given;
  }

  /** Resolves when every run of the moment has ended (while draining, nothing new starts). */
  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.all([...this.runs.values()].map((run) => run.done));
  }

  /** Looks for placed work at once (a wake-up from the store), or right after the current look. */
  wake(): void {
    this.pollNap.wake();
  }

  private async every(intervalMs: number, work: () => Promise<void>, nap = new Nap()): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await work();
      } catch (error) {
        this.emit('failed', error);
      }
      await nap.sleep(this.options.clock, intervalMs, this.abort.signal);
    }
  }

  private async heartbeat(): Promise<void> {
    const { availableMb } = readMemory();
    const disk = readDisk(this.options.logDir);
    let ok: boolean;
    // Trusted from the send time: an answer read after a pause vouches only for before it.
    const sentAtMs = this.options.clock.monotonicNowMs();
    try {
      ok = await this.options.store.hosts.heartbeat({
        name: this.options.host,
        session: this.options.session,
        ramFreeMb: availableMb,
        disk,
      });
      if (ok) {
        this.lastHeartbeatOkMs = Math.max(this.lastHeartbeatOkMs, sentAtMs);
        this.lastError = null;
        this.emit('beat');
      } else {
        this.fence(await this.refusal());
      }
    } catch (error) {
      // Unreachable: past the stale threshold recovery may have handed our work away.
      this.lastError = error;
      this.emit('failed', error);
      if (this.options.clock.monotonicNowMs() - this.lastHeartbeatOkMs > this.trustMs())
        this.fence(this.silence());
    }
  }

  /**
   * How long to act without a successful heartbeat: two beats short of the stale threshold, so
   * agents die before recovery can hand their task to someone else; up.ts has checked that it
   * covers an agent's real cadence with room to spare (core/heartbeat-windows.ts).
   */
  private trustMs(): number {
    return heartbeatWindows(this.options.heartbeatIntervalMs, this.options.staleAfterMs).trustMs;
  }

  private async poll(): Promise<void> {
    // Draining: what is placed here meanwhile goes back (a placement that raced the mark, an
    // operator's enable of the host through an older client), the host marked first.
    if (this.givingBack) await this.giveBackPlaced('runner draining: placed on it while it drains', true);
    if (this.draining) return;
    const assigned = await this.options.store.dispatch.assigned(this.options.session);
    for (const job of assigned) this.begin(job);
    this.emit('polled');
  }

  /**
   * Runs a job the dispatcher of this same process has just placed on this runner, at once: not
   * after the store's wake-up (a NOTIFY, or SQLite's file poll) and an `assigned` read. The job
   * is the row the placement returned (claimed, for this session, at its epoch); the run's first
   * write is guarded by that epoch as the poll's would be, and the poll, still the fallback for
   * placements made elsewhere, skips a job already running here.
   */
  take(job: Job): void {
    if (job.session === this.options.session && job.status === 'claimed') this.begin(job);
  }

  /**
   * Places `job` (queued at its epoch, without a workspace) on this host under the dispatcher's
   * `term` and begins its run in the same commit (store.runs.placeAndBegin), for the dispatcher
   * of this same process: the agent starts one commit and one round trip sooner. The run's guard
   * is the job as that placement makes it (this runner's session, the next epoch), known before
   * the answer, so a run whose answer is lost gives it back as any run failing on the store does.
   * Resolves with the placed job, or null when it was not placed (nothing was written: the caller
   * places it the usual way to learn why); rejects when the store failed. Null at once when this
   * runner cannot take it so: another host, a re-check before every run, stopping, or running it;
   * and for a `github:` task, whose placement and start stay two updates (two outbox rows, as on
   * SQLite, where the one commit still writes both).
   */
  placeAndRun(job: Job, host: string, term: TermRef): Promise<Job | null> | null {
    if (host !== this.options.host || this.options.recheck !== undefined) return null;
    if (job.key.startsWith('github:')) return null;
    // No command to run it with: placed the usual way, where the store says why (decision 0047).
    if (job.command === null && this.options.defaultCommand === null) return null;
    if (this.runs.has(job.id) || this.abort.signal.aborted || this.draining) return null;
    let answer: (placed: Job | null) => void = () => undefined;
    let fail: (error: unknown) => void = () => undefined;
    const placed = new Promise<Job | null>((resolve, reject) => ((answer = resolve), (fail = reject)));
    // The job as the placement makes it (claim-set.ts): placed only at the epoch read, so no claim
    // came between and its next epoch and attempt are these.
    const session = this.options.session;
    const next = { epoch: job.epoch + 1, attempt: job.attempt + 1 };
    const guard: Job = { ...job, ...next, status: 'claimed', session, host, reason: null, term: term.term };
    const begin: BeginCall = async ({ job: _guard, ...run }) => {
      const begun = await this.options.store.runs
        .placeAndBegin({ ...run, term, id: job.id, epoch: job.epoch, host, runner: session })
        .catch((error: unknown) => {
          fail(error);
          throw error;
        });
      answer(begun.placed ? begun.job : null);
      if (!begun.placed) return { ok: false, start: { ok: false, reason: 'lost', job: null } };
      const made = { epoch: begun.job.epoch, attempt: begun.job.attempt };
      assert(made.epoch === next.epoch && made.attempt === next.attempt, `job ${job.id}: placed as foreseen`);
      return begun;
    };
    this.begin(guard, begin);
    return placed;
  }

  private begin(job: Job, begin?: BeginCall): void {
    if (this.runs.has(job.id) || this.abort.signal.aborted || this.draining) return;
    const options = {
      ...this.options,
      runnerSession: this.options.session,
      trustMs: this.trustMs(),
      output: this.output,
    };
    const run = new AgentRun({ ...options, sessionTtlMs: this.options.staleAfterMs }, job, begin);
    const done = run
      .run()
      .catch(async (error: unknown) => {
        this.emit('failed', error, job);
        await this.giveBack(job, error);
      })
      .finally(() => {
        this.runs.delete(job.id);
        this.emit('ended', job);
      });
    this.runs.set(job.id, { run, done });
  }

  /**
   * A run that failed on the store (an unknown outcome: the start committed but its answer was
   * lost, say) may have left its job claimed or running under this live session, where recovery
   * never looks. Give it back to the queue, guarded by its epoch (a no-op once it moved on),
   * retrying while the store is unreachable. Found by the chaos suite (test/chaos/lost-start).
   */
  private async giveBack(job: Job, error: unknown): Promise<void> {
    const why = error instanceof Error ? error.message : String(error);
    const reason = `the run failed on the store (${why})`;
    while (!this.abort.signal.aborted) {
      try {
        await this.endOrphanAgent(job);
        const guard = { id: job.id, session: this.options.session, epoch: job.epoch };
        const result = await this.options.store.dispatch.requeue({
          ...guard,
          reason,
          policy: this.options.policy,
        });
        if (result.ok)
          this.options.log(`job ${job.id} ${job.key}: ${reason}; given back (${result.job.status})`);
        return;
      } catch {
        await this.options.clock.sleep(this.options.pollIntervalMs, this.abort.signal);
      }
    }
  }

  /**
   * A run's start, agent session and claim commit together (store.runs.begin): when its answer
   * was lost, the run never learnt its agent's session, which holds the task's claim and would
   * refuse the job's next attempt until it went stale. It is this process's (host, pid and the
   * job in its name, as run-start.ts makes it), and its run is over: it is ended, which releases
   * the claim.
   */
  private async endOrphanAgent(job: Job): Promise<void> {
    const { store, host } = this.options;
    const claim = await store.claims.current(job.key).catch(() => null);
    if (claim === null) return;
    const holder = await store.sessions.get(claim.session);
    const ours = holder?.kind === 'agent' && holder.host === host && holder.pid === process.pid;
    if (ours && holder.state === 'live' && holder.name === agentSessionName(job.id))
      await store.sessions.end(holder.id);
  }
}
