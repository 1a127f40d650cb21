import type { Store } from '../store/store.js';
import type { WakeFor } from '../store/wakeups.js';

/**
 * Passes the store's wake-ups (an enqueue, a requeue, a placement, a freed slot or lock, in any
 * process; `placements` only, for a runner) to the dispatcher or the runner, so work starts
 * without waiting for their next poll; the polls stay as the fallback. Without wake-ups (the
 * store cannot listen) nothing changes.
 */
export function pumpWakeups(
  store: Store,
  stop: AbortSignal,
  wake: () => void,
  wakeFor: WakeFor = 'any',
): { stop: () => void; done: Promise<void> } {
  const end = new AbortController();
  const quit = (): void => end.abort();
  stop.addEventListener('abort', quit, { once: true });
  const done = (async () => {
    const waiter = await store.wakeups.waiter(wakeFor).catch(() => null);
    if (waiter === null) return;
    try {
      while (!end.signal.aborted) {
        await waiter.wait(60_000, end.signal);
        if (!end.signal.aborted) wake();
      }
    } finally {
      waiter.close();
      stop.removeEventListener('abort', quit);
    }
  })();
  return { stop: quit, done };
}
