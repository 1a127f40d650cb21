/** The process's own clocks. Deadlines use the monotonic one; the wall clock is for display. */
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../core/time.js';

export const systemClock: Clock = {
  wallNow: () => Date.now(),
  monotonicNowMs: () => performance.now(),
  sleep: async (ms, signal) => {
    try {
      await delay(ms, undefined, signal === undefined ? {} : { signal });
    } catch {
      // Aborted: the loop that slept is stopping.
    }
  },
};
