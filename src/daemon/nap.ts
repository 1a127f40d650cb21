/**
 * The pause between two passes of a loop, which `wake()` ends early. A wake that arrives while
 * the loop is at work is kept: the next pause then ends at once, so the loop looks once more.
 */
import type { Clock } from '../core/time.js';

export class Nap {
  private woken = false;
  private current: AbortController | null = null;

  wake(): void {
    this.woken = true;
    this.current?.abort();
  }

  /** Sleeps `ms` unless woken (before or during) or `stop` aborts. */
  async sleep(clock: Clock, ms: number, stop: AbortSignal): Promise<void> {
    if (this.woken || stop.aborted) {
      this.woken = false;
      return;
    }
    const nap = new AbortController();
    this.current = nap;
    const end = (): void => nap.abort();
    stop.addEventListener('abort', end, { once: true });
    try {
      await clock.sleep(ms, nap.signal);
    } finally {
      stop.removeEventListener('abort', end);
      this.current = null;
      this.woken = false;
    }
  }
}
