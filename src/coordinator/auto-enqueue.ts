/**
 * Auto-enqueue (`baton setting set auto-enqueue on`): the leading `baton up` queues a job for every
 * open task nothing would work otherwise (store/task-list.ts), so the queue runs the backlog
 * without a person queuing each task: tasks added by hand or imported from GitHub, and tasks sent
 * back to open by a reviewer's rejection (the next run reads the feedback) or a resolved
 * escalation. Off by default: a team that triages by hand keeps doing so.
 *
 * Each task is queued by the store's own enqueue, by key, so the guards are the ones every
 * enqueue has: at most one active job per task (a unique index), the task still open when the job
 * goes in, and a `job:enqueued` row naming `auto-enqueue` and the leader's session. A task that
 * moved on between the read and its enqueue (claimed, closed, queued by someone) is passed over.
 */
import { TaskStateError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { SessionId } from '../core/session.js';
import type { Store } from '../store/store.js';

/** Tasks queued in one pass, at most: a large import is queued over a few passes. */
const AUTO_ENQUEUE_PASS_MAX = 100;
/** Who queued, in the ledger's `job:enqueued` rows. */
const AUTO_ENQUEUE_ACTOR = 'auto-enqueue';

/** One pass: the jobs it queued, none when the setting is not `on`. */
export async function autoEnqueue(store: Store, by: SessionId): Promise<readonly Job[]> {
  if ((await store.settings.get('auto-enqueue')) !== 'on') return [];
  const tasks = await store.tasks.list({ unqueued: true, limit: AUTO_ENQUEUE_PASS_MAX });
  const queued: Job[] = [];
  for (const task of tasks) {
    try {
      const { job, created } = await store.jobs.enqueue({ key: task.key, by, actor: AUTO_ENQUEUE_ACTOR });
      if (created) queued.push(job);
    } catch (error) {
      // The task's state refused it (claimed, closed, escalated since the read): nothing to queue.
      if (!(error instanceof TaskStateError)) throw error;
    }
  }
  return queued;
}
