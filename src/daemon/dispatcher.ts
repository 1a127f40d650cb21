/**
 * The dispatcher runs only while its process leads (docs/architecture.md#lease and
 * #dispatch-run-and-rescue). Each tick it places queued jobs on hosts by live free RAM and free
 * slots (core/placement.ts), writing every placement under its lease term; the store refuses a term
 * that is no longer current, so a paused leader that wakes up changes nothing. Every few ticks it
 * also rescues the work of sessions whose heartbeats stopped.
 *
 * Before placing a job it resolves the job's workspace plan (docs/architecture.md#workspace-plan,
 * core/workspace-plan.ts):
 * - lock mode none: placed as is; no lock is read or taken, so cognitive runs go in parallel;
 * - exclusive: placed together with the workspace's lock, in one store step; a held workspace
 *   keeps the job queued, `waiting for workspace W, held by job J`, tried again next tick;
 * - unresolved (WorkspaceConfigurationError): not placed; the job stays queued behind a backoff
 *   with `SKIPPED workspace_unresolved: <cause>`, and the ledger gets `job:skipped`.
 */
import { EventEmitter } from 'node:events';
import { assert, assertNever } from '../core/assert.js';
import type { Job } from '../core/job.js';
import { placeJob, type HostCapacity } from '../core/placement.js';
import type { RetryPolicy } from '../core/retry.js';
import { WorkspaceConfigurationError } from '../core/errors.js';
import type { Clock } from '../core/time.js';
import { waitingForWorkspace } from '../core/workspace-lock.js';
import type { PlaceResult, RescueReport, TermRef } from '../store/dispatch-store.js';
import type { Store } from '../store/store.js';
import { Nap } from './nap.js';
import { workspacePlanner } from '../coordinator/workspaces.js';

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

export interface DispatcherEvents {
  placed: [job: Job, term: number];
  /** A job waits for a workspace; emitted when its reason changes. */
  waiting: [job: Job, reason: string];
  /** A job was skipped because its workspace plan is unresolved; emitted when its reason changes. */
  skipped: [job: Job, error: WorkspaceConfigurationError];
  fenced: [term: number];
  rescued: [report: RescueReport];
  failed: [error: unknown];
}

export class Dispatcher extends EventEmitter<DispatcherEvents> {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly nap = new Nap();
  private lastRecoveryMs = -Infinity;

  constructor(private readonly o: DispatcherOptions) {
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
      } catch (error) {
        this.emit('failed', error);
      }
      await this.nap.sleep(this.o.clock, this.o.intervalMs, this.abort.signal);
    }
  }

  /**
   * Ends the current pause at once, or the next one when a pass is running: a new leader, or a
   * wake-up from the store (work or capacity appeared), places work without waiting for a tick.
   */
  wake(): void {
    this.nap.wake();
  }

  /** One pass: rescue when due, then place what fits. Does nothing unless this process leads. */
  async tick(): Promise<void> {
    const term = this.o.elector.leaderTerm();
    if (term === null) return;
    const ref: TermRef = { lease: this.o.elector.name, holder: this.o.holder, term };
    const mono = this.o.clock.monotonicNowMs();
    if (mono - this.lastRecoveryMs >= this.o.recoveryIntervalMs) {
      this.lastRecoveryMs = mono;
      const report = await this.o.store.recovery.rescueStale({
        staleAfterMs: this.o.staleAfterMs,
        policy: this.o.policy,
      });
      if (report.sessions.length + report.jobsRequeued.length + report.jobsFailed.length > 0) {
        this.emit('rescued', report);
      }
    }
    await this.place(ref);
  }

  private async place(ref: TermRef): Promise<void> {
    const { store } = this.o;
    const jobs = await store.dispatch.queued({ limit: this.o.batchMax ?? 50 });
    if (jobs.length === 0) return;
    const now = await store.now();
    const hosts: HostCapacity[] = [...(await store.hosts.list())];
    const planOf = workspacePlanner(store);
    for (const job of jobs) {
      if (this.o.elector.leaderTerm() !== ref.term) return;
      if (job.gate !== null) {
        await this.waitFor(job, `waiting for ${job.gate} approval`, ref);
        continue;
      }
      let workspace: string | undefined;
      try {
        const plan = await planOf(job.key);
        // Only the exclusive branch names a workspace, so only it reads or takes a lock. A
        // `worktree` workspace gives every claim its own checkout (run-workspace.ts): the task's
        // claim already makes that exclusive, so coding runs on different tasks go in parallel.
        workspace =
          plan.lockMode === 'exclusive' && plan.workspace.kind !== 'worktree'
            ? plan.workspace.name
            : undefined;
      } catch (error) {
        if (!(error instanceof WorkspaceConfigurationError)) throw error;
        await this.skipUnresolved(job, error, ref);
        continue;
      }
      const ramMb = job.ramMb ?? 0;
      const placement = placeJob(ramMb, hosts, now, this.o.staleAfterMs);
      if (!placement.ok) {
        // Smaller jobs behind may still fit (backfill); the one that waits says why.
        if (job.reason !== placement.reason) {
          await store.dispatch.markWaiting({ id: job.id, reason: placement.reason, term: ref });
        }
        continue;
      }
      const r = await store.dispatch.place({ id: job.id, host: placement.host, term: ref, workspace });
      if (r.ok) {
        const i = hosts.findIndex((h) => h.name === placement.host);
        const h = hosts[i];
        assert(h !== undefined, `placed on host ${placement.host}, which the placement did not offer`);
        hosts[i] = {
          ...h,
          jobsActive: h.jobsActive + 1,
          ramPromisedMb: h.ramPromisedMb + ramMb,
          ramPendingMb: h.ramPendingMb + ramMb,
        };
        this.emit('placed', r.job, ref.term);
        continue;
      }
      if ((await this.refused(job, r, workspace, ref)) === 'fenced') return;
    }
  }

  /** What a refused placement means for the job, and whether this pass must stop (`fenced`). */
  private async refused(
    job: Job,
    r: Exclude<PlaceResult, { ok: true }>,
    workspace: string | undefined,
    ref: TermRef,
  ): Promise<'fenced' | 'next'> {
    switch (r.reason) {
      case 'workspace_held': {
        assert(workspace !== undefined, `job ${job.id}: a workspace was held although none was asked for`);
        // Not cancelled: it stays queued, says who holds the workspace, and is tried next tick.
        const reason = waitingForWorkspace(workspace, r.holder);
        const marked =
          job.reason !== reason &&
          (await this.o.store.dispatch.markWaiting({ id: job.id, reason, term: ref }));
        if (marked) this.emit('waiting', job, reason);
        return 'next';
      }
      case 'gated':
        await this.waitFor(job, `waiting for ${r.gate ?? 'design'} approval`, ref);
        return 'next';
      case 'lost':
        // No longer queued (cancelled, or placed by a pass under an earlier term): nothing to do.
        return 'next';
      case 'fenced':
        this.emit('fenced', ref.term);
        return 'fenced';
      default:
        return assertNever(r);
    }
  }

  /** Records why a queued job is not placed (once per reason) and says it. */
  private async waitFor(job: Job, reason: string, ref: TermRef): Promise<void> {
    if (job.reason === reason) return;
    if (await this.o.store.dispatch.markWaiting({ id: job.id, reason, term: ref }))
      this.emit('waiting', job, reason);
  }

  /**
   * A job that needs a workspace and has none bound goes back to the pool: it stays queued, not
   * placed, behind a backoff so it does not spin, with the cause as its reason and a `job:skipped`
   * ledger entry carrying the cause and the fix. There is no claim to release: the dispatch path
   * never claims the task (the runner claims it in Step 0, only after a placement).
   */
  private async skipUnresolved(job: Job, error: WorkspaceConfigurationError, ref: TermRef): Promise<void> {
    const reason = `SKIPPED workspace_unresolved: ${error.message}`;
    const skipped = await this.o.store.dispatch.skip({
      id: job.id,
      term: ref,
      reason,
      detail: { reason: 'workspace_unresolved', cause: error.message, fix: error.hint ?? '' },
      backoffMs: this.o.unresolvedBackoffMs ?? UNRESOLVED_BACKOFF_MS,
    });
    if (skipped && job.reason !== reason) this.emit('skipped', job, error);
  }
}
