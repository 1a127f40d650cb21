/** The worker loop the throughput bench drives on both engines. */
import type { Store } from '../src/store/store.js';

/**
 * One worker's loop on Baton's full path: claim and start the first job, then finish each job and
 * claim the next in one step (jobs.finishAndClaimNext), every transition audited and fenced.
 */
export async function drainLoop(store: Store, session: number, onFirst: () => void): Promise<number> {
  let count = 0;
  let job = await store.jobs.claimNext({ session, start: true });
  while (job !== null) {
    if (count === 0) onFirst();
    const guard = { id: job.id, session, epoch: job.epoch };
    const { finished, next } = await store.jobs.finishAndClaimNext({ ...guard, status: 'done', start: true });
    if (!finished.ok) throw new Error(`bench: job ${job.id} was lost`);
    count++;
    job = next;
  }
  return count;
}
