/**
 * Job retention (docs/decisions/0039-job-retention.md): finished jobs older than a duration, judged
 * on the database clock, are removed with their output rows, in bounded batches, while the ledger
 * keeps their story. Pure: the durations and bounds, and the reading of a retention flag.
 */
import { InvalidInputError } from './errors.js';
import { validateDuration } from './validate.js';

/** `baton up`'s default: a month, past the job logs' 14 days, so a job outlives its log file. */
export const JOB_RETAIN_DEFAULT_MS = 30 * 86_400_000;
/** The shortest retention anyone may ask for, and the longest (ten years). */
const RETAIN_MIN_MS = 1000;
const RETAIN_MAX_MS = 3650 * 86_400_000;
/**
 * Jobs removed per transaction: short enough never to hold SQLite's writer, its event loop (a
 * batch is one synchronous call there, decision 0016) or a PG transaction long. bench/job-retention.ts
 * on 1,000,000 jobs: 2,000 a batch held SQLite's loop 92 ms (median) to 492 ms, 500 held it 33 to 239.
 */
export const JOB_PRUNE_BATCH = 500;
/** Batches per leader pass (20,000 jobs): a backlog of millions drains over passes, never in one. */
export const JOB_PRUNE_PASS_BATCHES = 40;
/** How often the leader's pass runs: at most 1.2 million jobs an hour. */
export const JOB_PRUNE_EVERY_MS = 60_000;

/** `--retain-jobs`: a duration such as 30d, or `0`/`off` (null: never remove a job). */
export function parseRetainJobs(what: string, raw: unknown): number | null {
  if (typeof raw === 'string' && /^\s*(0+|off)\s*$/i.test(raw)) return null;
  if (raw === 0) return null;
  return validateDuration(what, raw, RETAIN_MIN_MS, RETAIN_MAX_MS);
}

/** `baton jobs prune --older-than`: a duration; `off` means nothing to prune, so it is refused. */
export function parseOlderThan(raw: unknown): number {
  const ms = parseRetainJobs('--older-than', raw);
  if (ms === null) {
    throw new InvalidInputError(
      `--older-than must be a duration such as 30d, got ${JSON.stringify(raw)}`,
      'write how long finished jobs are kept, e.g. --older-than 30d',
    );
  }
  return ms;
}
