/**
 * Retention of the GitHub outbox's applied rows (docs/decisions/0013-github-backlog.md, "Retention
 * of applied rows"): a row GitHub has been told of is removed once it was applied longer ago than a
 * duration, judged on the database clock, in bounded batches. A row not yet applied is never
 * removed. Pure: the durations and bounds, and the reading of the flag.
 */
import { parseRetainJobs } from './job-retention.js';

/**
 * `baton up`'s default: a week. An applied row says only that an issue's labels were looked at
 * again (the task's story is in the ledger, its labels are projected from its state), so it is
 * kept just long enough to answer "why did the label change this week".
 */
export const OUTBOX_RETAIN_DEFAULT_MS = 7 * 86_400_000;
/** Rows removed per transaction: as job retention's batch (core/job-retention.ts), for the same reasons. */
export const OUTBOX_PRUNE_BATCH = 500;
/** Batches per leader pass (20,000 rows): a table grown for months drains over passes, never in one. */
export const OUTBOX_PRUNE_PASS_BATCHES = 40;
/** How often the leader's pass runs, as job retention's. */
export const OUTBOX_PRUNE_EVERY_MS = 600_000;

/** `--retain-github-outbox`: a duration such as 7d, or `0`/`off` (null: never remove a row). */
export function parseRetainOutbox(raw: unknown): number | null {
  return parseRetainJobs('--retain-github-outbox', raw, true, 'every applied row');
}
