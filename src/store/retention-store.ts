/**
 * Job retention (docs/decisions/0039-job-retention.md): the removal of finished jobs older than a
 * cutoff on the database clock, one bounded batch per call and transaction, and what has been
 * removed so far (for /metrics and for a reader that asks for a job no longer there).
 */
import type { JobId, JobState } from '../core/job.js';
import type { Instant } from '../core/time.js';
import type { TermRef } from './dispatch-store.js';

/**
 * Where a pass's batches are in `jobs_finished`'s order: where the previous batch stopped (its last
 * removed job, or the last entry of the window it looked at, often a kept one).
 */
export interface JobPruneCursor {
  readonly finishedAt: Instant;
  readonly id: JobId;
}

export interface JobPruneParams {
  /** Jobs that finished more than this many ms before the database's now. */
  readonly olderThanMs: number;
  /** At most this many jobs in this call (one transaction). */
  readonly limit: number;
  /** The leader's term: refused as `fenced` unless it is the live term of its lease. */
  readonly term?: TermRef | undefined;
  /** Count what would go (every such job, no limit) and change nothing. */
  readonly dryRun?: boolean | undefined;
  /** Who asked, named in the ledger row (`baton jobs prune`); the leader's pass leaves it out. */
  readonly by?: string | undefined;
  /**
   * Only jobs after this one in (finished_at, id) order: the previous batch's `last`, so a pass
   * walks past the jobs it keeps once, not once a batch. A pass starts without it (what was kept
   * may have become removable since).
   */
  readonly after?: JobPruneCursor | undefined;
  /**
   * At most this many entries of the index looked at after `after` (default ten times `limit`):
   * a batch never walks more, however many of them are kept; it answers where it stopped.
   */
  readonly scan?: number | undefined;
}

export type JobPruneResult =
  | {
      readonly ok: true;
      /** Jobs removed (with a dry run, the jobs that would be). */
      readonly removed: number;
      /** The database's now less olderThanMs: jobs that finished before it may go. */
      readonly cutoff: Instant;
      /**
       * Where the next batch goes on, in (finished_at, id) order (its `after`): the last job
       * removed when the batch took its limit, else the last entry it looked at; null when it
       * looked at the last entry that may go (the end of a sweep).
       */
      readonly last: JobPruneCursor | null;
    }
  | { readonly ok: false; readonly reason: 'fenced' };

/** What retention has removed since the database was made. */
export interface RetentionState {
  readonly removed: number;
  /** The jobs removed by the state they ended in: /metrics adds them to the finished jobs. */
  readonly byStatus: readonly { readonly name: JobState; readonly count: number }[];
  /** The highest id removed (0: none): an unknown id at or below it may have been removed. */
  readonly maxId: JobId;
  /** The cutoff and time of the last batch that removed something; null before any. */
  readonly lastCutoff: Instant | null;
  readonly lastAt: Instant | null;
}

export interface RetentionStore {
  readonly retention: {
    /**
     * Removes up to `limit` jobs in a terminal state (core/job.ts) that finished before the cutoff,
     * oldest finish first, each with its output rows, and writes one `jobs:pruned` ledger row when
     * it removed any, in one transaction. Never a job that is not over, nor one that is kept: the
     * newest job of its task (so `task show` still explains the task), one a workspace lock names,
     * or one whose session still holds its task's claim. The run tokens naming a removed job go with
     * it: none can open anything, since a run token verifies only while its job runs. The
     * ledger's rows about a removed job stay. Fenced (nothing changed) when `term` is not live.
     */
    pruneJobs(params: JobPruneParams): Promise<JobPruneResult>;
    state(): Promise<RetentionState>;
  };
}
