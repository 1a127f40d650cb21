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

/**
 * Calls `tick` every `ms` on `clock` until `stop` aborts, and resolves once stopped: setInterval
 * on an injected clock, so a test drives it with a fake one. The tick is not awaited, as with
 * setInterval: one that hangs (a store call on a silent connection) does not hold back the next.
 */
export async function every(
  clock: Clock,
  ms: DurationMs,
  tick: () => void,
  stop: AbortSignal,
): Promise<void> {
  while (!stop.aborted) {
    await clock.sleep(ms, stop);
    if (!stop.aborted) tick();
  }
}

/** A duration in its largest whole unit, as flags take it: `2h`, `90m`, `45s`; `1500ms` when none is whole. */
export function durationWords(ms: DurationMs): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
