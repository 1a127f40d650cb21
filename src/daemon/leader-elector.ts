/**
 * Keeps one dispatcher leader per cluster (docs/architecture.md#lease). The leader renews at
 * about a third of the TTL and trusts its lease only until `sent + ttl - margin` on its own
 * monotonic clock, anchored when the renewal was sent. It steps down as soon as a renewal is
 * refused or that window passes, whichever comes first. Safety does not rest on this loop: every
 * dispatch carries the term, and the store refuses a term that is no longer current.
 */
import { EventEmitter } from 'node:events';
import { DISPATCHER_LEASE, renewIntervalMs, trustedUntil, type LeaseResult } from '../core/lease.js';
import { assert } from '../core/assert.js';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';

export interface LeaderElectorOptions {
  readonly store: Store;
  readonly holder: string;
  readonly ttlMs: number;
  /** How often a standby tries to take the lease. */
  readonly retryIntervalMs: number;
  /** Renewal interval; defaults to a third of the TTL. */
  readonly renewIntervalMs?: number | undefined;
  /** Subtracted from the trust window to absorb clock-rate differences. */
  readonly safetyMarginMs?: number | undefined;
  readonly clock: Clock;
  /** A draw in [0, 1) for the ±10% jitter of each pause; Math.random unless a test fixes it. */
  readonly random?: (() => number) | undefined;
  readonly name?: string | undefined;
}

/** Why an elector stepped down. */
export type LostReason = 'refused' | 'trust-window' | 'stopped' | 'unresigned';

export interface LeaderEvents {
  gained: [term: number];
  /**
   * Stepped down. `unresigned`: stopped, but its lease could not be resigned (the database did not
   * answer, `error` says why): it stays on the database until its TTL runs out, no other leads till then.
   */
  lost: [term: number, reason: LostReason, error?: unknown];
  unreachable: [error: unknown];
  /** The lease's store answered (a renewal, or a try to take it): after `unreachable`, it works again. */
  reached: [];
}

export class LeaderElector extends EventEmitter<LeaderEvents> {
  readonly name: string;
  private currentTerm: number | null = null;
  /** The term this elector last stepped down from. */
  private lastTerm: number | null = null;
  private trustedUntilMs = 0;
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: LeaderElectorOptions) {
    super();
    this.name = options.name ?? DISPATCHER_LEASE;
  }

  /** The term this process may act under now, or null. Checks the trust window on every call. */
  leaderTerm(): number | null {
    if (this.currentTerm !== null && this.options.clock.monotonicNowMs() >= this.trustedUntilMs) {
      this.stepDown('trust-window');
    }
    return this.currentTerm;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    const term = this.currentTerm;
    if (term === null) return;
    // No longer trusted from here on; said once the resign has answered, so the line is true.
    this.currentTerm = null;
    this.lastTerm = term;
    try {
      await this.options.store.leases.resign({ name: this.name, holder: this.options.holder, term });
      this.emit('lost', term, 'stopped');
    } catch (error) {
      this.emit('lost', term, 'unresigned', error);
    }
  }

  private stepDown(reason: LostReason): void {
    const term = this.currentTerm;
    if (term === null) return;
    this.currentTerm = null;
    this.lastTerm = term;
    this.emit('lost', term, reason);
  }

  /**
   * An acquire by the holder of a lease that has not expired answers that lease as it is, without
   * extending it. After stepping down from that very term (its trust window passed while the lease
   * still ran on the database clock), renew it before trusting it for a window of its own.
   */
  private async retake(result: LeaseResult): Promise<LeaseResult> {
    if (!result.ok || result.lease.term !== this.lastTerm) return result;
    const { name, holder } = result.lease;
    assert(holder === this.options.holder, `acquired lease ${name} is held by ${String(holder)}`);
    return this.options.store.leases.renew({
      name,
      holder,
      term: result.lease.term,
      ttlMs: this.options.ttlMs,
    });
  }

  private async run(): Promise<void> {
    const { clock } = this.options;
    const margin = this.options.safetyMarginMs ?? Math.min(1000, Math.floor(this.options.ttlMs / 10));
    while (!this.abort.signal.aborted) {
      const term = this.leaderTerm();
      const sentAt = clock.monotonicNowMs();
      try {
        if (term !== null) {
          const result = await this.options.store.leases.renew({
            name: this.name,
            holder: this.options.holder,
            term,
            ttlMs: this.options.ttlMs,
          });
          // The window is anchored when the renewal was sent: a slow answer only shortens it.
          if (result.ok) this.trustedUntilMs = trustedUntil(sentAt, this.options.ttlMs, margin);
          else this.stepDown('refused');
        } else {
          const result = await this.retake(
            await this.options.store.leases.acquire({
              name: this.name,
              holder: this.options.holder,
              ttlMs: this.options.ttlMs,
            }),
          );
          if (result.ok && !this.abort.signal.aborted) {
            this.trustedUntilMs = trustedUntil(sentAt, this.options.ttlMs, margin);
            this.currentTerm = result.lease.term;
            this.emit('gained', result.lease.term);
          }
        }
        this.emit('reached');
      } catch (error) {
        // The database is unreachable: keep trying; the trust window ends the term if it lasts.
        this.emit('unreachable', error);
      }
      const wait =
        this.leaderTerm() !== null
          ? (this.options.renewIntervalMs ?? renewIntervalMs(this.options.ttlMs))
          : this.options.retryIntervalMs;
      const draw = (this.options.random ?? Math.random)();
      assert(draw >= 0 && draw < 1, `a jitter draw is in [0, 1), got ${draw}`);
      await clock.sleep(wait * (0.9 + draw * 0.2), this.abort.signal);
    }
  }
}
