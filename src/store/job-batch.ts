/**
 * The parameters and answer of jobs.batch (store.ts): a worker's batch completion and its next
 * batch fetch in one durable commit (docs/decisions/0017-batch-fetch-and-completion.md).
 */
import type { Job, JobId, JobTransitionResult } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { Instant } from '../core/time.js';
import type { JobFinishParams } from './store.js';

/** One member of a batch completion: a job of the batch's session, under its own epoch. */
export interface JobBatchFinish {
  readonly id: JobId;
  readonly epoch: number;
  readonly status: JobFinishParams['status'];
  readonly exitCode?: number | null | undefined;
  readonly reason?: string | null | undefined;
  readonly outputTail?: string | null | undefined;
}

export interface JobBatchParams {
  readonly session: SessionId;
  /** Host the jobs taken will run on; defaults to the session's host. */
  readonly host?: string | undefined;
  /** Jobs to finish, each as jobs.finish would (its own guard, answer and ledger rows). */
  readonly finish?: readonly JobBatchFinish[] | undefined;
  /** Then take up to this many due jobs, each claimed and started, with its own epoch. */
  readonly take?: number | undefined;
  /**
   * How long each job taken may be held: once the database clock passes claimed_at + leaseMs, its
   * holder's writes under that epoch are refused and the next batch taken gives it back.
   */
  readonly leaseMs?: number | undefined;
}

/**
 * A member's answer: what jobs.finish would have answered; a member failed past its job's own time
 * limit (decision 0037) is ok with its job failed `timed out`, and says so with `timedOut: true`
 * (the others carry no such field).
 */
export type JobBatchMember =
  JobTransitionResult | { readonly ok: true; readonly job: Job; readonly timedOut: true };

export interface JobBatchResult {
  /** One answer per member of `finish`, in order (JobBatchMember). */
  readonly finished: readonly JobBatchMember[];
  /** The jobs taken, in queue order, running under the session. */
  readonly taken: readonly Job[];
  /** When the lease of every job taken runs out (database clock); null when none was taken. */
  readonly leaseUntil: Instant | null;
}
