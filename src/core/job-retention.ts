/**
 * Job retention (docs/decisions/0039-job-retention.md): finished jobs older than a duration, judged
 * on the database clock, are removed with their output rows, in bounded batches, while the ledger
 * keeps their story. Pure: the durations and bounds, and the reading of a retention flag.
 */
import { InvalidInputError } from './errors.js';
import { validateDuration } from './validate.js';

/** `baton up`'s default: a month, past the job logs' 14 days, so a job outlives its log file. */
export const JOB_RETAIN_DEFAULT_MS = 30 * 86_400_000;
/**
 * The shortest retention anyone may ask for (an hour: shorter removes a run's record while people
 * still look at it), and the longest (ten years).
 */
const RETAIN_MIN_MS = 3_600_000;
const RETAIN_MAX_MS = 3650 * 86_400_000;
/**
 * Jobs removed per transaction: short enough never to hold SQLite's writer, its event loop (a
 * batch is one synchronous call there, decision 0016) or a PG transaction long. bench/job-retention.ts
 * on 1,000,000 jobs: 2,000 a batch held SQLite's loop 92 ms (median) to 492 ms, 500 held it 33 to 239.
 */
export const JOB_PRUNE_BATCH = 500;
/** Batches per leader pass (20,000 jobs): a backlog of millions drains over passes, never in one. */
export const JOB_PRUNE_PASS_BATCHES = 40;
/**
 * How often the leader's pass runs: at most 120,000 jobs an hour. Each pass that removes jobs
 * makes stats() count its tables again once (decision 0040), so passes are not more frequent.
 */
export const JOB_PRUNE_EVERY_MS = 600_000;

/**
 * `--retain-jobs`: a duration such as 30d, or `0`/`off` (null: never remove a job). `keepsAll`:
 * whether this surface takes `0`/`off`, so that the hint offers it only where it is not refused;
 * `every`: what `0`/`off` keeps (the GitHub outbox's retention reads its flag here too).
 */
export function parseRetainJobs(
  what: string,
  raw: unknown,
  keepsAll = true,
  every = 'every job',
): number | null {
  if (typeof raw === 'string' && /^\s*(0+|off)\s*$/i.test(raw)) return null;
  if (raw === 0) return null;
  // Elsewhere a bare number is seconds (--lease-ttl 15); here `30` meant as days would remove
  // nearly every finished job, so a unit is required.
  if (typeof raw === 'number' || (typeof raw === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(raw))) {
    throw new InvalidInputError(
      `${what} needs a unit, got ${JSON.stringify(raw)}`,
      `write it with one, e.g. ${what} 30d (or 12h)${keepsAll ? `; 0 or off keeps ${every}` : ''}`,
    );
  }
  return validateDuration(what, raw, RETAIN_MIN_MS, RETAIN_MAX_MS);
}

/**
 * `baton jobs prune --older-than`: a duration; `off` means nothing to prune, so it is refused. A
 * refusal names the field as `what` (the HTTP body's `olderThan`).
 */
export function parseOlderThan(raw: unknown, what = '--older-than'): number {
  const ms = parseRetainJobs(what, raw, false);
  if (ms === null) {
    throw new InvalidInputError(
      `${what} must be a duration such as 30d, got ${JSON.stringify(raw)}`,
      `write how long finished jobs are kept, e.g. ${what} 30d`,
    );
  }
  return ms;
}
