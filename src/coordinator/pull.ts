/**
 * Pull mode, for a script that works the queue itself instead of through `baton up`: take the
 * next due job (claimed and started in one commit), then finish it, optionally taking the next
 * in the same commit. The session is the script's own (`baton session start`), and every step is
 * guarded by it and by the job's epoch, exactly as the runner's are.
 */
import type { Instant } from '../core/time.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import {
  validateDuration,
  validateEpoch,
  validateId,
  validateInteger,
  validateOneOf,
  validateText,
} from '../core/validate.js';
import type { JobBatchFinish, JobBatchMember, JobBatchResult } from '../store/job-batch.js';
import { SWEPT_ENDING, timedOutWords } from '../store/time-limit-reason.js';
import type { JobFinishAndClaimNextResult, JobFinishParams, Store } from '../store/store.js';

/** What a pull-mode worker may end its job as; oom_killed is the runner's to say. */
const PULL_FINISH_STATUSES = ['done', 'failed', 'cancelled'] as const;
/** Length of a job's finish reason; the same bound as a task title (a task's reason: core/task.ts). */
const FINISH_REASON_LENGTH_MAX = 500;

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
    input.reason === undefined ? undefined : validateText('reason', input.reason, FINISH_REASON_LENGTH_MAX);
  return {
    id: validateId('job', input.id),
    session: validateId('session', input.session),
    epoch: validateEpoch(input.epoch),
    ...statusAndExitCode(input),
    reason: reason ?? null,
  };
}

/**
 * A finish that gives an exit code but no status is judged by the code, as the runner judges the
 * jobs it runs: 0 done, anything else failed (`baton job finish 7 … --exit-code $?`). A status
 * given outright is kept whatever the code (a command whose exit 1 means "nothing to do").
 */
function statusAndExitCode(input: JobFinishInput): Pick<JobFinishParams, 'status' | 'exitCode'> {
  const exitCode = input.exitCode === undefined ? null : validateInteger('exit code', input.exitCode, 0, 255);
  if (input.status !== undefined)
    return { status: validateOneOf('status', input.status, PULL_FINISH_STATUSES), exitCode };
  return { status: exitCode === null || exitCode === 0 ? 'done' : 'failed', exitCode };
}

/** Jobs one batch may take or finish: bounds the statement and the time its jobs wait. */
export const BATCH_SIZE_MAX = 1000;
/** How long each job of a batch may be held unless the caller says: long enough to run a batch. */
const BATCH_LEASE_DEFAULT_MS = 300_000;
const BATCH_LEASE_MIN_MS = 1_000;
const BATCH_LEASE_MAX_MS = 86_400_000;

export interface JobBatchInput {
  readonly session: unknown;
  /** Jobs to finish: each { id, epoch, status?, exitCode?, reason? }. */
  readonly finish?: readonly Omit<JobFinishInput, 'session'>[] | undefined;
  /** How many jobs to take next, in the same commit (0 or left out: none). */
  readonly take?: unknown;
  /** How long each job taken may be held (a duration: 90s, 5m; default 5 minutes). */
  readonly lease?: unknown;
}

/** The size of a batch to take on its own (`job next --batch N`): at least one job. */
export function parseBatchSize(value: unknown): number {
  return validateInteger('batch size', value, 1, BATCH_SIZE_MAX);
}

export interface JobNextBatchInput {
  readonly session: unknown;
  /** How many due jobs to take, 1 to 1,000. */
  readonly size: unknown;
  readonly lease?: unknown;
}

/** Checks a batch by the rules `batch` applies (adapters check first, before any request). */
export function parseBatch(input: JobBatchInput) {
  const session = validateId('session', input.session);
  const take = input.take === undefined ? 0 : validateInteger('batch size', input.take, 0, BATCH_SIZE_MAX);
  const members = input.finish ?? [];
  if (members.length > BATCH_SIZE_MAX) {
    throw new InvalidInputError(
      `a batch finishes at most ${BATCH_SIZE_MAX} jobs, got ${members.length}`,
      'split the finishes into several batches',
    );
  }
  const finish: JobBatchFinish[] = members.map((member) => parseJobFinish({ ...member, session }));
  const seen = new Set<number>();
  for (const member of finish) {
    if (seen.has(member.id)) {
      throw new InvalidInputError(`job ${member.id} appears twice in the batch`, 'finish each job once');
    }
    seen.add(member.id);
  }
  const leaseMs =
    input.lease === undefined
      ? BATCH_LEASE_DEFAULT_MS
      : validateDuration('lease', input.lease, BATCH_LEASE_MIN_MS, BATCH_LEASE_MAX_MS);
  return { session, finish, take, leaseMs };
}

/**
 * A batch member the leader's sweep failed past its job's own time limit before this batch came
 * (decision 0037, "The sweep's loose ends"): lost as any member that moved on, and `timedOut` with
 * the line a single `baton job finish` of it is refused with (`message`).
 */
export interface SweptMember {
  readonly ok: false;
  readonly reason: 'lost';
  readonly job: Job;
  readonly timedOut: true;
  readonly message: string;
}

/** A batch's answer as Pull gives it: the store's, its swept members told apart (SweptMember). */
export interface PullBatchResult extends Omit<JobBatchResult, 'finished'> {
  readonly finished: readonly (JobBatchMember | SweptMember)[];
}

/** The longest `job next --wait` blocks: a script that waits longer asks again. */
const NEXT_WAIT_MAX_MS = 300_000;

/**
 * The longest one `POST /v1/jobs/next` waits, well within a client's request timeout; a remote
 * client that waits longer asks again (cli/remote-api.ts).
 */
export const HTTP_NEXT_WAIT_MAX_MS = 20_000;

/** `job next --wait`'s duration (0 to 5 minutes), in ms. */
export function parseNextWait(value: unknown): number {
  return validateDuration('wait', value, 0, NEXT_WAIT_MAX_MS);
}

export class Pull {
  constructor(private readonly store: Store) {}

  /**
   * Claims and starts the best due job for the session; null when none is due. With `wait` (a
   * duration), an idle session waits up to that long for one: it says so to the store, so the
   * next enqueue claims its job for it in the enqueue's own commit (decision 0024), and it looks
   * again whenever the store wakes it. Null when the time ran out with no job, or at once when
   * `signal` aborts (the asker is gone: it takes nothing more; a hand-off that came meanwhile stays
   * named on the session, and its next claim takes it back under a new epoch).
   */
  async next(session: unknown, wait?: unknown, signal?: AbortSignal): Promise<Job | null> {
    const id = validateId('session', session);
    if (wait === undefined) return this.store.jobs.claimNext({ session: id, start: true });
    const deadline = Date.now() + parseNextWait(wait);
    const waiter = await this.store.wakeups.waiter();
    try {
      for (;;) {
        const left = deadline - Date.now();
        // The last look does not wait, so no hand-off can come after it.
        const job = await this.store.jobs.claimNext({
          session: id,
          start: true,
          ...(left > 0 ? { waitMs: left } : {}),
        });
        if (job !== null || left <= 0) return job;
        await waiter.wait(left, signal);
        if (signal?.aborted === true) return null;
      }
    } finally {
      waiter.close();
    }
  }

  /**
   * Batch completion and fetch in one commit: finishes each job given under its own epoch (a
   * fenced one answers lost alone), then takes up to `take` due jobs, each started under its own
   * epoch and a lease of `lease`. A member the leader's sweep failed past its own limit answers
   * lost with the time-limit line (SweptMember), read from the store's answer: no extra read.
   */
  async batch(input: JobBatchInput): Promise<PullBatchResult> {
    const params = parseBatch(input);
    const result = await this.store.jobs.batch(params);
    const finished = result.finished.map((member, index): JobBatchMember | SweptMember => {
      const given = params.finish[index];
      if (member.ok || member.job === null || given === undefined) return member;
      const asked = { ...given, session: params.session };
      const swept = sweptUnder(member.job, asked);
      if (swept === null) return member;
      const message = timedOutRefusal(asked, swept.startedAt, swept.limitMs, true).message;
      return { ...member, job: member.job, timedOut: true, message };
    });
    return { ...result, finished };
  }

  /** Takes up to `size` due jobs (at least one) in one commit, each under its own epoch and lease. */
  nextBatch(input: JobNextBatchInput): Promise<PullBatchResult> {
    const session = validateId('session', input.session);
    const take = parseBatchSize(input.size);
    return this.batch({ session, take, ...(input.lease === undefined ? {} : { lease: input.lease }) });
  }

  /**
   * Finishes the session's job; with `next`, claims and starts the next one in the same commit. A
   * job past its own time limit is failed `timed out` instead, whatever the worker says, and the
   * finish refused (timedOut).
   */
  async finish(input: JobFinishInput, next: boolean): Promise<JobFinishAndClaimNextResult> {
    const params = parseJobFinish(input);
    await this.timedOut(params);
    if (next) return this.store.jobs.finishAndClaimNext({ ...params, start: true });
    return { finished: await this.store.jobs.finish(params), next: null };
  }

  /**
   * A pull-mode worker's process is not Baton's to kill, so its finish is where the job's own time
   * limit holds (decision 0037): judged on the database clock, the job's `job:timed_out` row and
   * its failing finish (the runner's reason, the worker's own status and reason kept after it) are
   * one transaction (progress.failTimedOut), and the finish is refused with one line. A run that
   * is no longer the session's is not judged: the finish then answers lost as any other does.
   */
  private async timedOut(params: JobFinishParams): Promise<void> {
    const verdict = await this.store.progress.failTimedOut(params);
    if (verdict.timedOut) throw timedOutRefusal(params, verdict.startedAt, verdict.limitMs);
    if (verdict.reason === 'lost') await this.sweptBefore(params);
  }

  /**
   * A run no longer the session's: when the leader's sweep failed it past its limit under this very
   * epoch (progress.sweepTimedOut), the late finish is refused with the same line as a finish past
   * the limit; any other loss answers lost as before. One read, only on this rare path.
   */
  private async sweptBefore(params: JobFinishParams): Promise<void> {
    const swept = sweptUnder(await this.store.jobs.get(params.id), params);
    if (swept !== null) throw timedOutRefusal(params, swept.startedAt, swept.limitMs, true);
  }
}

/**
 * The job's start and limit when the leader's sweep failed it under this session and epoch, else
 * null. The sweep's words only: a worker's own finish past the limit, sent again, answers lost.
 */
function sweptUnder(
  job: Job | null,
  guard: Pick<JobFinishParams, 'session' | 'epoch'>,
): { startedAt: Instant; limitMs: number } | null {
  if (job === null || job.status !== 'failed' || job.epoch !== guard.epoch) return null;
  if (job.session !== guard.session || job.startedAt === null || job.timeLimitMs === null) return null;
  if (job.reason?.endsWith(SWEPT_ENDING) !== true) return null;
  return { startedAt: job.startedAt, limitMs: job.timeLimitMs };
}

/** The one line refusing a finish past the job's own limit (exit 3, HTTP 409). */
function timedOutRefusal(
  params: JobFinishParams,
  startedAt: Instant,
  limitMs: number,
  swept = false,
): ConflictError {
  const { id } = params;
  return new ConflictError(
    `job ${id} ${timedOutWords(startedAt, limitMs)}: ${endedAs(params.status, swept)}`,
    `\`baton retry ${id}\` queues it again with the same limit; enqueue it with a longer --time-limit for more`,
  );
}

/**
 * How a timed-out job ended, against what its worker said (`said`), for the refusal's line; `swept`:
 * the leader failed it before this finish came, so the worker's word is not in its reason.
 */
function endedAs(said: JobFinishParams['status'], swept: boolean): string {
  if (swept && said === 'failed') return 'the leader failed it as timed out before this finish came';
  if (swept) return `the leader failed it before this finish came: it is failed, not ${said}`;
  return said === 'failed'
    ? "it is failed as timed out, the worker's failure kept in its reason"
    : `it is failed, not ${said}`;
}
