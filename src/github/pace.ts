/**
 * Octokit's throttling plugin paces writes as GitHub asks: one at a time, a second apart, and three
 * seconds apart for those that notify (a comment). That is right against GitHub and is kept as it
 * is by default. `BATON_GITHUB_WRITE_PACE_MS` (a test hook, as `BATON_GITHUB_RETRY_BASE_MS`) says
 * what one of those seconds waits instead, so tests against the local stand-in do not spend a
 * second on every label change; the writes are still made one at a time, in order.
 */
import type { ThrottlingOptions } from '@octokit/plugin-throttling';

/** The write and notifications limiters of the plugin's options (typed there as Bottleneck groups). */
type Pacing = Pick<Extract<ThrottlingOptions, { write?: unknown }>, 'write' | 'notifications'>;

/** The limiter shape the plugin calls: `limiter.key(id).schedule(options, task, ...args)`. */
interface Schedules {
  key(id: string): {
    schedule(options: unknown, task: (...args: unknown[]) => unknown, ...args: unknown[]): unknown;
  };
}

/** One at a time, each start at least `gapMs` after the previous one's start. */
function pacer(gapMs: number): Schedules {
  let turn: Promise<void> = Promise.resolve();
  let lastStart = 0;
  const schedule = (
    _options: unknown,
    task: (...args: unknown[]) => unknown,
    ...args: unknown[]
  ): unknown => {
    const mine = turn.then(async () => {
      const waitMs = lastStart + gapMs - Date.now();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      lastStart = Date.now();
    });
    const run = mine.then(() => task(...args));
    turn = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
  return { key: () => ({ schedule }) };
}

/**
 * The plugin's `write` and `notifications` limiters scaled to `secondMs` a second, or nothing
 * (the plugin's own, 1 s and 3 s) when it is not given.
 */
export function writePacing(secondMs: number | undefined): Pacing {
  if (secondMs === undefined) return {};
  // The plugin calls only `key(id).schedule(...)` on them (its doRequest).
  return { write: pacer(secondMs), notifications: pacer(3 * secondMs) } as unknown as Pacing;
}
