/** Milliseconds since the Unix epoch, as read from the database clock (never a host clock). */
export type Instant = number;
export type DurationMs = number;

/**
 * Local time for a process: the wall clock only for display, the monotonic clock for deadlines
 * such as a leader's trust window. Injected so tests can drive it.
 */
export interface Clock {
  wallNow(): Instant;
  monotonicNowMs(): number;
  sleep(ms: DurationMs, signal?: AbortSignal): Promise<void>;
}
