/**
 * A process clock that moves only when a test says so (the `Clock` of src/core/time.ts). Loops
 * under test sleep on it; `advance` moves both clocks and ends every sleep whose time has come,
 * oldest deadline first. `sleeping` waits until a number of sleeps are pending, which is how a
 * test knows a loop has finished its pass (its store calls are real, so they take real time).
 *
 * It moves the process's clock only: the database clock is moved with moveDatabaseClock
 * (test/support/clock.ts), so a test can make the two disagree, as a paused process would see.
 */
import type { Clock } from '../../src/core/time.js';

interface Sleeper {
  readonly until: number;
  /** Ends the sleep, and drops its abort listener, as timers/promises does when its timer fires. */
  readonly resolve: () => void;
}

export class FakeClock implements Clock {
  private mono = 0;
  private readonly wallStart: number;
  private sleepers: Sleeper[] = [];
  private watchers: { count: number; resolve: () => void }[] = [];
  /** Every sleep asked for, in order, as requested (for jitter and interval checks). */
  readonly asked: number[] = [];

  constructor(wallStart = Date.UTC(2026, 0, 1)) {
    this.wallStart = wallStart;
  }

  wallNow(): number {
    return this.wallStart + this.mono;
  }

  monotonicNowMs(): number {
    return this.mono;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.asked.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted === true) {
        resolve();
        return;
      }
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        resolve();
      };
      const sleeper: Sleeper = {
        until: this.mono + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.notify();
    });
  }

  /** Sleeps not yet ended. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Resolves once at least `count` sleeps are pending. */
  sleeping(count = 1): Promise<void> {
    return new Promise<void>((resolve) => {
      this.watchers.push({ count, resolve });
      this.notify();
    });
  }

  /** Moves time forward by `ms`, ending the sleeps that are due, in deadline order. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error(`a clock only moves forward (asked ${ms} ms)`);
    this.mono += ms;
    const due = this.sleepers.filter((s) => s.until <= this.mono).sort((a, b) => a.until - b.until);
    this.sleepers = this.sleepers.filter((s) => s.until > this.mono);
    for (const s of due) s.resolve();
  }

  private notify(): void {
    const ready = this.watchers.filter((w) => this.sleepers.length >= w.count);
    this.watchers = this.watchers.filter((w) => this.sleepers.length < w.count);
    for (const w of ready) w.resolve();
  }
}

/** A repeatable random source in [0, 1) for jitter, or a constant one. */
export function fixedRandom(value: number): () => number {
  if (!(value >= 0 && value < 1)) throw new Error(`a random draw is in [0, 1), not ${value}`);
  return () => value;
}
