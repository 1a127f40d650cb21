/**
 * The dispatcher runs only while its process leads (seed A, layers 1 and 2). Each tick it places
 * queued jobs on hosts by live free RAM and free slots (core/placement.ts), writing every
 * placement under its lease term; the store refuses a term that is no longer current, so a
 * paused leader that wakes up changes nothing. Every few ticks it also rescues the work of
 * sessions whose heartbeats stopped.
 */
import { EventEmitter } from 'node:events';
import type { Job } from '../core/job.js';
import { placeJob, type HostCapacity } from '../core/placement.js';
import type { RetryPolicy } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import type { RescueReport, TermRef } from '../store/dispatch-store.js';
import type { Store } from '../store/store.js';
import type { LeaderElector } from './leader-elector.js';

export interface DispatcherOptions {
  readonly store: Store;
  readonly elector: LeaderElector;
  readonly holder: string;
  readonly clock: Clock;
  readonly intervalMs: number;
  /** A host or session silent for longer than this is dead. */
  readonly staleAfterMs: number;
  readonly recoveryIntervalMs: number;
  readonly policy: RetryPolicy;
  /** Queued jobs considered per tick. */
  readonly batchMax?: number | undefined;
}

export interface DispatcherEvents {
  placed: [job: Job, term: number];
  fenced: [term: number];
  rescued: [report: RescueReport];
  failed: [error: unknown];
}

export class Dispatcher extends EventEmitter<DispatcherEvents> {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
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
      await this.o.clock.sleep(this.o.intervalMs, this.abort.signal);
    }
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
    for (const job of jobs) {
      if (this.o.elector.leaderTerm() !== ref.term) return;
      const ramMb = job.ramMb ?? 0;
      const placement = placeJob(ramMb, hosts, now, this.o.staleAfterMs);
      if (!placement.ok) {
        // Smaller jobs behind may still fit (backfill); the one that waits says why.
        if (job.reason !== placement.reason) {
          await store.dispatch.markWaiting({ id: job.id, reason: placement.reason, term: ref });
        }
        continue;
      }
      const r = await store.dispatch.place({ id: job.id, host: placement.host, term: ref });
      if (r.ok) {
        const i = hosts.findIndex((h) => h.name === placement.host);
        const h = hosts[i];
        if (h !== undefined) {
          hosts[i] = {
            ...h,
            jobsActive: h.jobsActive + 1,
            ramPromisedMb: h.ramPromisedMb + ramMb,
            ramPendingMb: h.ramPendingMb + ramMb,
          };
        }
        this.emit('placed', r.job, ref.term);
      } else if (r.reason === 'fenced') {
        this.emit('fenced', ref.term);
        return;
      }
    }
  }
}
