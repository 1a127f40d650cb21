/**
 * A last look outside Baton before a run is started: `baton up --github` re-reads the task's
 * issue (src/github/recheck.ts). `go: false` ends the placed job `cancelled` with the reason,
 * before the job is started, the task claimed or anything spawned.
 */
import type { Job } from '../core/job.js';
import type { Store } from '../store/store.js';

export type Recheck = (
  job: Job,
) => Promise<{ readonly go: true } | { readonly go: false; readonly reason: string }>;

/** true when the run may go ahead. */
export async function recheckBeforeRun(
  options: {
    readonly store: Store;
    readonly recheck?: Recheck | undefined;
    readonly log: (line: string) => void;
  },
  job: Job,
  guard: { readonly id: number; readonly session: number; readonly epoch: number },
): Promise<boolean> {
  if (options.recheck === undefined) return true;
  const verdict = await options.recheck(job);
  if (verdict.go) return true;
  // Usually the re-check closed the task, which cancelled this job already (this finish is `lost`).
  await options.store.jobs.finish({ ...guard, status: 'cancelled', reason: verdict.reason });
  options.log(`job ${job.id} ${job.key}: not run, ${verdict.reason}`);
  return false;
}
