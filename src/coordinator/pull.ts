/**
 * Pull mode, for a script that works the queue itself instead of through `baton up`: take the
 * next due job (claimed and started in one commit), then finish it, optionally taking the next
 * in the same commit. The session is the script's own (`baton session start`), and every step is
 * guarded by it and by the job's epoch, exactly as the runner's are.
 */
import type { Job } from '../core/job.js';
import { validateEpoch, validateId, validateInteger, validateOneOf, validateText } from '../core/validate.js';
import type { JobFinishAndClaimNextResult, JobFinishParams, Store } from '../store/store.js';

/** What a pull-mode worker may end its job as; oom_killed is the runner's to say. */
export const PULL_FINISH_STATUSES = ['done', 'failed', 'cancelled'] as const;
/** Length of a finish reason; the same bound as a task title. */
export const REASON_LENGTH_MAX = 500;

export interface JobFinishInput {
  readonly id: unknown;
  readonly session: unknown;
  readonly epoch: unknown;
  readonly status?: unknown;
  readonly exitCode?: unknown;
  readonly reason?: unknown;
}

export function parseJobFinish(input: JobFinishInput): JobFinishParams {
  const reason =
    input.reason === undefined ? undefined : validateText('reason', input.reason, REASON_LENGTH_MAX);
  return {
    id: validateId('job', input.id),
    session: validateId('session', input.session),
    epoch: validateEpoch(input.epoch),
    status: input.status === undefined ? 'done' : validateOneOf('status', input.status, PULL_FINISH_STATUSES),
    exitCode: input.exitCode === undefined ? null : validateInteger('exit code', input.exitCode, 0, 255),
    reason: reason ?? null,
  };
}

export class Pull {
  constructor(private readonly store: Store) {}

  /** Claims and starts the best due job for the session; null when none is due. */
  next(session: unknown): Promise<Job | null> {
    return this.store.jobs.claimNext({ session: validateId('session', session), start: true });
  }

  /** Finishes the session's job; with `next`, claims and starts the next one in the same commit. */
  async finish(input: JobFinishInput, next: boolean): Promise<JobFinishAndClaimNextResult> {
    const p = parseJobFinish(input);
    if (next) return this.store.jobs.finishAndClaimNext({ ...p, start: true });
    return { finished: await this.store.jobs.finish(p), next: null };
  }
}
