/**
 * `baton up`'s defaults, apart from the daemon that uses them: the CLI reads them to parse its
 * flags before it loads the daemon, which only `baton up` itself needs (issue 22, item 4).
 */
import { availableParallelism } from 'node:os';

/** How the line that says the daemon joined begins: the CLI times its URL line from it. */
export const JOINED_LINE_START = 'joined as session ';

/** How the line that says the daemon's loops run begins (running-line.ts): it follows the join. */
export const RUNNING_LINE_START = 'running as session ';

export const UP_DEFAULTS = {
  leaseTtlMs: 15_000,
  retryIntervalMs: 2_000,
  heartbeatIntervalMs: 2_000,
  staleAfterMs: 10_000,
  pollIntervalMs: 500,
  recoveryIntervalMs: 2_000,
  slotsMax: Math.max(2, availableParallelism()),
  ramReservedMb: 512,
  sealIntervalMs: 2_000,
} as const;
