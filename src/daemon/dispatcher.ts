/**
 * The dispatcher runs only while its process leads (docs/architecture.md#lease and
 * #dispatch-run-and-rescue). Each tick it places queued jobs on hosts by live free RAM and free
 * slots (core/capacity.ts), writing every placement under its lease term; the store refuses a term
 * that is no longer current, so a paused leader that wakes up changes nothing. Every few ticks it
 * also rescues the work of sessions whose heartbeats stopped.
 *
 * A pass is set-based (core/dispatch-plan.ts, docs/decisions/0016-set-based-dispatch.md): one
 * read of the candidates with everything their plans need, one of the hosts, a pure decision, one
 * store step placing every job that fits and one recording why the others wait; a fixed number of
 * round trips whatever the batch. For each job it resolves the workspace plan
 * (docs/architecture.md#workspace-plan, core/workspace-plan.ts):
 * - lock mode none: placed as is; no lock is read or taken, so cognitive runs go in parallel;
 * - exclusive: placed together with the workspace's lock, in one store step; a held workspace
 *   keeps the job queued, `waiting for workspace W, held by job J`, tried again next tick;
 * - unresolved (WorkspaceConfigurationError): not placed; the job stays queued behind a backoff
 *   with `SKIPPED workspace_unresolved: <cause>`, and the ledger gets `job:skipped`.
 */
import { EventEmitter } from 'node:events';
import { assert, assertNever } from '../core/assert.js';
import { WAITING_FOR_AGENT_COMMAND } from '../core/capacity.js';
import {
  blockedReason,
  decideDispatch,
  gateReason,
  skippedReason,
  type PlannedPlacement,
} from '../core/dispatch-plan.js';
import type { WorkspaceConfigurationError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { RetryPolicy } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import { waitingForWorkspace, type LockHolder } from '../core/workspace-lock.js';
import type { PlaceResult, RescueReport, TermRef } from '../store/dispatch-store.js';
import type { Store } from '../store/store.js';
import { Nap } from './nap.js';

/** How long a job whose workspace plan is unresolved stays out of dispatch before a new look. */
const UNRESOLVED_BACKOFF_MS = 5_000;

/**
 * What the dispatcher needs of leadership (a LeaderElector in `baton up`): the lease's name and
 * the term this process may act under now, or null while it does not lead.
 */
export interface Leadership {
  readonly name: string;
  leaderTerm(): number | null;
}

export interface DispatcherOptions {
  readonly store: Store;
  readonly elector: Leadership;
  readonly holder: string;
  readonly clock: Clock;
  readonly intervalMs: number;
  /** A host or session silent for longer than this is dead. */
  readonly staleAfterMs: number;
  readonly recoveryIntervalMs: number;
  readonly policy: RetryPolicy;
  /** Queued jobs considered per tick. */
  readonly batchMax?: number | undefined;
  /** Backoff of a job skipped for an unresolved workspace plan; default UNRESOLVED_BACKOFF_MS. */
  readonly unresolvedBackoffMs?: number | undefined;
}

/** Places a job on this process's own runner and begins its run (runner.ts placeAndRun). */
type RunHere = (job: Job, host: string, term: TermRef) => Promise<Job | null> | null;

export interface DispatcherEvents {
  placed: [job: Job, term: number];
  /** A job waits for a workspace; emitted when its reason changes. */
  waiting: [job: Job, reason: string];
  /** A job was skipped because its workspace plan is unresolved; emitted when its reason changes. */
  skipped: [job: Job, error: WorkspaceConfigurationError];
  fenced: [term: number];
  rescued: [report: RescueReport];
  failed: [error: unknown];
  /** A tick ran to its end: after a failure, the database works again. */
  ticked: [];
}

export class Dispatcher extends EventEmitter<DispatcherEvents> {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly nap = new Nap();
  private lastRecoveryMs = -Infinity;
  /** A wake-up came since the last pass began: work or capacity may have appeared. */
  private woken = false;
  private runHere: RunHere | null = null;

  constructor(private readonly options: DispatcherOptions) {
    super();
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await this.tick();
        this.emit('ticked');
      } catch (error) {
        this.emit('failed', error);
      }
      await this.nap.sleep(this.options.clock, this.options.intervalMs, this.abort.signal);
    }
  }

  /**
   * Ends the current pause at once, or the next one when a pass is running: a new leader, or a
   * wake-up from the store (work or capacity appeared), places work without waiting for a tick.
   */
  wake(): void {
    this.woken = true;
    this.nap.wake();
  }

  /**
   * The runner of this same process (`baton up`): a pass that places a single job, without a
   * workspace, on that runner's host lets it place the job and begin its run in one commit
   * (runner.ts placeAndRun); one it did not place is then placed the usual way, which says why.
   */
  runPlacedHere(run: RunHere): void {
    this.runHere = run;
  }

  /** One pass: rescue when due, then place what fits. Does nothing unless this process leads. */
  async tick(): Promise<void> {
    const term = this.options.elector.leaderTerm();
    if (term === null) return;
    const ref: TermRef = { lease: this.options.elector.name, holder: this.options.holder, term };
    const mono = this.options.clock.monotonicNowMs();
    if (mono - this.lastRecoveryMs >= this.options.recoveryIntervalMs) {
      this.lastRecoveryMs = mono;
      const report = await this.options.store.recovery.rescueStale({
        staleAfterMs: this.options.staleAfterMs,
        policy: this.options.policy,
      });
      if (report.sessions.length + report.jobsRequeued.length + report.jobsFailed.length > 0) {
        this.emit('rescued', report);
      }
    }
    await this.place(ref);
  }

  /**
   * One pass, set-based (docs/decisions/0016-set-based-dispatch.md): the candidates in one read,
   * the fleet (the hosts with a free slot, and counts) in another, the decision in core
   * (core/dispatch-plan.ts), then the placements in one store step and the reasons in one more,
   * whatever the batch size. Every write carries the term, and the store judges each placement;
   * a refused one is reported as before.
   *
   * A pass a wake-up asked for (an enqueue, a requeue, a freed slot or lock) likely finds work:
   * where reads run side by side (PostgreSQL), it sends the fleet's read with the candidates', so
   * a start waits for one round trip there, not two (docs/decisions/0019, section 11). Any other
   * pass reads the fleet only once it found candidates: an idle poll reads what it read before.
   * The fleet is then read a fraction of a millisecond sooner: a snapshot taken before the
   * placement either way, as the decision always trusted.
   */
  private async place(ref: TermRef): Promise<void> {
    const { store } = this.options;
    const limit = this.options.batchMax ?? 50;
    const woken = this.woken;
    this.woken = false;
    const ahead = woken && store.capabilities.concurrentReads ? store.hosts.fleet() : null;
    ahead?.catch(() => undefined); // awaited below; dropped, failure included, when nothing is queued
    const { now, jobs } = await store.dispatch.candidates({ limit });
    if (jobs.length === 0) return;
    const fleet = await (ahead ?? store.hosts.fleet());
    const decision = decideDispatch(jobs, fleet, now, this.options.staleAfterMs);
    if (this.options.elector.leaderTerm() !== ref.term) return;
    const asks = decision.place.map((placement) => ({
      id: placement.job.id,
      host: placement.host,
      workspace: placement.workspace,
    }));
    // A stopping dispatcher places nothing more: its runner starts nothing, and what it placed
    // here would wait for the sweep (drain.ts).
    if (this.abort.signal.aborted) return;
    const here = await this.placeHere(decision.place, ref);
    if (here === null && this.abort.signal.aborted) return;
    const results =
      here ?? (asks.length === 0 ? [] : await store.dispatch.placeMany({ term: ref, jobs: asks }));
    const waits = decision.wait.map((wait) => ({ job: wait.job, reason: wait.reason }));
    // A full batch that placed work may have more behind it: the next pass comes at once (a
    // placement no longer wakes the process that made it: store/postgres/wakeups.ts).
    // The held jobs the read adds for their reasons (gated, blocked, waiting for an agent command)
    // are not of that batch. Its jobs with a command and those without are read up to `limit` each
    // (decision 0047, review fixes): either full may leave more behind.
    const runnable = jobs.filter(
      (job) => job.gate === null && job.blockedBy === null && !job.waitsForAgentCommand,
    );
    const full = (bare: boolean): boolean =>
      runnable.filter((candidate) => (candidate.job.command === null) === bare).length >= limit;
    if ((full(false) || full(true)) && results.some((result) => result.ok)) this.wake();
    for (const [index, result] of results.entries()) {
      const placement = decision.place[index];
      assert(placement !== undefined, 'placeMany answers each placement asked, in order');
      if (result.ok) {
        this.emit('placed', result.job, ref.term);
        continue;
      }
      if (result.reason === 'fenced') {
        this.emit('fenced', ref.term);
        return;
      }
      const reason = refusedReason(placement.job, result, placement.workspace);
      if (reason !== null) waits.push({ job: placement.job, reason });
    }
    for (const body of decision.behind) {
      const holder = holderAfter(results[body.index]);
      const reason = holder === null ? null : waitingForWorkspace(body.workspace, holder);
      if (reason !== null && body.job.reason !== reason) waits.push({ job: body.job, reason });
    }
    await this.setAside(ref, waits, decision.skip);
  }

  /** The pass's one placement made by this process's runner with its run's begin, or null. */
  private async placeHere(place: readonly PlannedPlacement[], ref: TermRef): Promise<PlaceResult[] | null> {
    const [only] = place;
    if (this.runHere === null || only === undefined || place.length > 1 || only.workspace !== undefined)
      return null;
    const placed = await this.runHere(only.job, only.host, ref);
    return placed === null ? null : [{ ok: true, job: placed }];
  }

  /** Records the reasons that changed and the skips, in one store step, and says which moved. */
  private async setAside(
    ref: TermRef,
    waits: readonly { job: Job; reason: string }[],
    skips: readonly { job: Job; error: WorkspaceConfigurationError }[],
  ): Promise<void> {
    if (waits.length + skips.length === 0) return;
    const backoffMs = this.options.unresolvedBackoffMs ?? UNRESOLVED_BACKOFF_MS;
    const result = await this.options.store.dispatch.setAside({
      term: ref,
      waits: waits.map((wait) => ({ id: wait.job.id, reason: wait.reason })),
      skips: skips.map(({ job, error }) => ({
        id: job.id,
        reason: skippedReason(error),
        detail: { reason: 'workspace_unresolved', cause: error.message, fix: error.hint ?? '' },
        backoffMs,
      })),
    });
    const waited = new Set(result.waited);
    const skipped = new Set(result.skipped);
    for (const wait of waits) if (waited.has(wait.job.id)) this.emit('waiting', wait.job, wait.reason);
    for (const skip of skips) if (skipped.has(skip.job.id)) this.emit('skipped', skip.job, skip.error);
  }
}

/** Who holds the lock a placement of this pass asked for: its job once placed, or the holder met. */
function holderAfter(result: PlaceResult | undefined): Pick<LockHolder, 'session' | 'host' | 'jobId'> | null {
  if (result === undefined) return null;
  if (result.ok)
    return { session: result.job.session ?? 0, host: result.job.host ?? '', jobId: result.job.id };
  return result.reason === 'workspace_held' ? result.holder : null;
}

/**
 * Why a job the store refused to place (but did not fence) waits now, or null when there is
 * nothing new to record (the job moved on: cancelled, or placed under an earlier term).
 */
function refusedReason(
  job: Job,
  row: Exclude<PlaceResult, { ok: true } | { reason: 'fenced' }>,
  workspace: string | undefined,
): string | null {
  switch (row.reason) {
    case 'workspace_held': {
      assert(workspace !== undefined, `job ${job.id}: a workspace was held although none was asked for`);
      // Not cancelled: it stays queued, says who holds the workspace, and is tried next pass.
      const reason = waitingForWorkspace(workspace, row.holder);
      return job.reason === reason ? null : reason;
    }
    case 'gated': {
      const reason = gateReason(row.gate);
      return job.reason === reason ? null : reason;
    }
    case 'blocked': {
      const reason = blockedReason(row.blocker);
      return job.reason === reason ? null : reason;
    }
    case 'no_agent_command':
      // Its host's runner re-registered without one since the fleet was read (decision 0047).
      return job.reason === WAITING_FOR_AGENT_COMMAND ? null : WAITING_FOR_AGENT_COMMAND;
    case 'lost':
      return null;
    default:
      return assertNever(row);
  }
}

/**
 * What a recovery pass did. Jobs are taken back from sessions it rescued (silent past their TTL)
 * and from sessions already ended without handing theirs on (a host's earlier runner, taken over)
 * or whose pull lease passed: a pass of only the latter rescued no session, and says so.
 */
export function rescueLine(rescue: RescueReport): string {
  const jobs = `requeued [${rescue.jobsRequeued.join(', ')}], failed [${rescue.jobsFailed.join(', ')}]`;
  if (rescue.sessions.length > 0) return `rescued sessions [${rescue.sessions.join(', ')}]: ${jobs}`;
  return `took back jobs whose session had already ended or whose lease passed (no session rescued): ${jobs}`;
}
