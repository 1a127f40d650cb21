/**
 * Progress marks for the adapters (core/progress.ts): checks raw input, then asks the store. Also
 * what a list of jobs shows about progress: whether each running job is stalled, and when its
 * agent last made a mark.
 */
import type { Job, JobId } from '../core/job.js';
import { lastProgressAt, PROGRESS_COUNTERS, type Progress, type ProgressCounter } from '../core/progress.js';
import type { Instant } from '../core/time.js';
import { InvalidInputError } from '../core/errors.js';
import { validateId, validateInteger } from '../core/validate.js';
import type { ProgressMarkResult } from '../store/progress-store.js';
import type { Store } from '../store/store.js';

export type ProgressMarkInput = { readonly session: unknown; readonly note?: unknown } & {
  readonly [K in ProgressCounter]?: unknown;
};

/** What a job shows about its progress. */
export interface JobProgress {
  /** The record of the job's agent session, if it has one. */
  readonly progress: Progress | null;
  /** Running, and marked stalled with no mark since. */
  readonly stalled: boolean;
  /** Its agent's last mark, or its start when it made none; null for a job never started. */
  readonly lastProgressAt: Instant | null;
}

export class ProgressMarks {
  constructor(private readonly store: Store) {}

  mark(input: ProgressMarkInput): Promise<ProgressMarkResult> {
    const counts: Partial<Record<ProgressCounter, number>> = {};
    for (const name of PROGRESS_COUNTERS) {
      const raw = input[name];
      if (raw !== undefined) counts[name] = validateInteger(name, raw, 0, Number.MAX_SAFE_INTEGER);
    }
    if (input.note !== undefined && input.note !== null && typeof input.note !== 'string') {
      throw new InvalidInputError('the progress note must be text', 'say what happened in a few words');
    }
    return this.store.progress.mark({
      session: validateId('session', input.session),
      ...counts,
      note: input.note ?? null,
    });
  }

  get(session: unknown): Promise<Progress | null> {
    return this.store.progress.get(validateId('session', session));
  }

  /** The progress of each job, by id: one read for the whole list. */
  async ofJobs(jobs: readonly Job[]): Promise<ReadonlyMap<JobId, JobProgress>> {
    const sessions = [
      ...new Set(jobs.flatMap((job) => (job.agentSession === null ? [] : [job.agentSession]))),
    ];
    const records = new Map(
      (await this.store.progress.list(sessions)).map((record) => [record.session, record]),
    );
    return new Map(jobs.map((job) => [job.id, jobProgress(job, records)]));
  }
}

function jobProgress(job: Job, records: ReadonlyMap<number, Progress>): JobProgress {
  const progress = job.agentSession === null ? null : (records.get(job.agentSession) ?? null);
  const stalled =
    job.status === 'running' && progress?.stalledAt !== null && progress?.stalledAt !== undefined;
  const last = job.startedAt === null ? null : lastProgressAt(job.startedAt, progress);
  return { progress, stalled, lastProgressAt: last };
}
