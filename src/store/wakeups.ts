/**
 * Wake-ups: a hint that jobs may have become claimable or been placed (an enqueue, a retry, a
 * requeue, a placement, committed by any process; not a placed job's start, which frees
 * nothing), so that an idle worker, dispatcher or runner can look again at once instead of at
 * its next poll. A hint, never a promise: a waiter always looks in the store to find out, and
 * keeps a timeout as its fallback, because a wake can be spurious and, across a lost connection,
 * late.
 *
 * Each waiter is a latch: a wake opens every latch, and `wait` returns at once if its latch
 * opened since the last `wait` returned. So a wake that arrives while the caller is busy looking
 * is not lost: the next `wait` returns straight away and the caller looks once more.
 */
export interface Waiter {
  /** Returns when the latch opens (at once if it opened already), after `timeoutMs`, or on abort. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Stops listening; a pending wait returns. */
  close(): void;
}

/**
 * What a waiter is woken by: `any` change above, or `placements` only (a job placed on some
 * runner: what a runner's poll looks for). An engine that cannot tell one change from another
 * (SQLite) wakes both kinds on every change.
 */
export type WakeFor = 'any' | 'placements';

export interface Wakeups {
  /**
   * A new waiter, once the engine listens (PostgreSQL: one LISTEN connection per store, opened
   * by the first waiter; SQLite: PRAGMA data_version polled every few milliseconds while
   * anyone waits, and every write of this store). On PostgreSQL a placement this store made
   * does not wake its own waiters (postgres/wakeups.ts); SQLite cannot tell its own apart.
   */
  waiter(wakeFor?: WakeFor): Promise<Waiter>;
}

class Latch implements Waiter {
  private opened = false;
  private release: (() => void) | null = null;

  constructor(
    private readonly onClose: (latch: Latch) => void,
    readonly wakeFor: WakeFor,
  ) {}

  open(): void {
    this.opened = true;
    this.release?.();
  }

  async wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (!this.opened && signal?.aborted !== true) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          this.release = null;
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        signal?.addEventListener('abort', done, { once: true });
        this.release = done;
      });
    }
    this.opened = false;
  }

  close(): void {
    this.onClose(this);
    this.release?.();
  }
}

/** The waiters of one store; the engine calls `wake` when it learns of a change. */
export class WakeHub {
  private readonly latches = new Set<Latch>();

  /** Called when the first waiter arrives and when the last one leaves. */
  constructor(private readonly onActive: (active: boolean) => void = () => {}) {}

  get waiting(): number {
    return this.latches.size;
  }

  /** Opens the latches of the waiters woken by `change` (`unknown`: every waiter). */
  wake(change: 'placement' | 'other' | 'unknown' = 'unknown'): void {
    for (const latch of this.latches) if (change !== 'other' || latch.wakeFor === 'any') latch.open();
  }

  add(wakeFor: WakeFor = 'any'): Waiter {
    const latch = new Latch((closed) => {
      if (this.latches.delete(closed) && this.latches.size === 0) this.onActive(false);
    }, wakeFor);
    this.latches.add(latch);
    if (this.latches.size === 1) this.onActive(true);
    return latch;
  }
}
