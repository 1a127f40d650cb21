/** The batch routes' answers over HTTP (`job next --batch`, `job finish-batch`), read back as Pull's result. */
import type { PullBatchResult } from '../coordinator/pull.js';
import type { Job } from '../core/job.js';

/** A batch route's answer: the CLI's --json of `job next --batch` and `job finish-batch`. */
export interface WireBatch {
  readonly finished?: PullBatchResult['finished'];
  readonly jobs: readonly Job[];
  readonly leaseUntil: string | null;
}

export const batchResult = (batch: WireBatch): PullBatchResult => ({
  finished: batch.finished ?? [],
  taken: batch.jobs,
  leaseUntil: batch.leaseUntil === null ? null : Date.parse(batch.leaseUntil),
});
