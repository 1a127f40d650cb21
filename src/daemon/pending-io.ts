/**
 * Node runs due timers before it reads pending I/O. After this process did not run for a while
 * (CPU starvation on a busy host, a long synchronous call, SIGSTOP), a watchdog timer would judge
 * trust before reading the heartbeat answers that came in meanwhile, and fence a claim whose beat
 * the database took. A watchdog that finds the window passed waits for this first: one turn of
 * the event loop, whose poll phase reads those answers, then judges again. An answer still counts
 * only from when its beat was sent, so a pause longer than the trust window still fences.
 */
export function afterPendingIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
