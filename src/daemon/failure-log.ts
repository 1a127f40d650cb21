/**
 * The log of a failure that repeats: with the database down, the runner's loops fail every poll
 * (0.5 s), and a line each time buried everything else (10 lines in 4 s). The first failure is
 * logged at once; those after it at most once per `quietMs`, the latest with how many failed
 * since (whatever they said: a dropped connection and a refused one alternate as the server goes
 * down); and one line when it works again.
 */
import { age } from '../core/host-liveness.js';
import type { Clock } from '../core/time.js';

/** How long the same failure stays quiet after its line. */
const REPEAT_QUIET_MS = 30_000;

export interface FailureLog {
  /** A failure: logged, or counted for the next line. */
  failed(error: unknown): void;
  /** It works again: one line if a failure was logged since the last such line. */
  recovered(): void;
}

export function failureLog(
  log: (line: string) => void,
  what: string,
  clock: Pick<Clock, 'monotonicNowMs'>,
  quietMs = REPEAT_QUIET_MS,
): FailureLog {
  let since: number | null = null;
  let lastAtMs: number | null = null;
  let repeats = 0;
  return {
    failed(error) {
      const message = error instanceof Error ? error.message : String(error);
      const now = clock.monotonicNowMs();
      since ??= now;
      if (lastAtMs !== null && now - lastAtMs < quietMs) {
        repeats++;
        return;
      }
      const again =
        lastAtMs !== null && repeats > 0
          ? ` (${repeats + 1} failures in the last ${age(now - lastAtMs)})`
          : '';
      log(`${what}: ${message}${again}`);
      lastAtMs = now;
      repeats = 0;
    },
    recovered() {
      if (since === null) return;
      const now = clock.monotonicNowMs();
      const more = repeats > 0 ? `; ${repeats} more failure(s) since the last line` : '';
      log(`${what}: works again after ${age(now - since)} of failures${more}`);
      since = null;
      lastAtMs = null;
      repeats = 0;
    },
  };
}
