/** The worker loop the throughput bench drives on both engines. */
import type { Store } from '../src/store/store.js';

/**
 * Jobs a loop takes and completes per commit: Graphile's best configuration fetches up to 1000
 * (localQueue.size); of 500 and 1000 tried here, 500 with two loops (docs/benchmarks.md).
 */
export const DRAIN_BATCH = 500;
/** Long enough for a batch of no-op jobs; a worker that stalls past it is fenced. */
const LEASE_MS = 60_000;

/**
 * One worker's loop on Baton's full path, in batches (jobs.batch): take up to `batch` jobs, run
 * them, then complete them all and take the next batch in one commit. Every job is still claimed,
 * started and finished under its own epoch and lease, with its own ledger rows.
 */
export async function drainLoop(
  store: Store,
  session: number,
  onFirst: () => void,
  batch = DRAIN_BATCH,
): Promise<number> {
  let count = 0;
  let answer = await store.jobs.batch({ session, take: batch, leaseMs: LEASE_MS });
  while (answer.taken.length > 0) {
    if (count === 0) onFirst();
    const finish = answer.taken.map((job) => ({ id: job.id, epoch: job.epoch, status: 'done' as const }));
    answer = await store.jobs.batch({ session, finish, take: batch, leaseMs: LEASE_MS });
    const lost = answer.finished.find((outcome) => !outcome.ok);
    if (lost !== undefined) throw new Error(`bench: job ${lost.job?.id ?? '?'} was lost`);
    count += finish.length;
  }
  return count;
}
