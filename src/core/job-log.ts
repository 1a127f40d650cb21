/**
 * Reading a job's output (`baton job log`, `GET /v1/jobs/{id}/log`, the dashboard's job page): the
 * rules, as pure functions. A run's output is `job-<id>-attempt-<n>.log` in the log folder of the
 * `baton up` that ran it; the database keeps only the last lines of a failed latest run
 * (`outputTail`). A reader asks for bytes from an offset and gets the next offset, where the bytes
 * came from, and whether the run has ended, so one loop follows a log locally and over HTTP.
 */
import { NotFoundError } from './errors.js';
import type { JobRun } from './job-attempts.js';
import { isTerminalJobState, type Job } from './job.js';
import type { StreamRun } from './output-stream.js';

/** The file name of one attempt's log. */
export function jobLogName(job: { readonly id: number; readonly attempt: number }): string {
  return `job-${job.id}-attempt-${job.attempt}.log`;
}

/**
 * Where a chunk's bytes came from: the log file, the output stream the runner copies into the
 * database (the file's bytes at the file's offsets), the database's kept tail, or nowhere (yet).
 */
export type LogSource = 'file' | 'stream' | 'database' | 'none';

/** One answer of a log read: bytes from `offset` to `next` of what `source` holds. */
export interface LogChunk {
  readonly job: number;
  readonly attempt: number;
  /** The host that ran the attempt (whose log folder holds its file), null before it is placed. */
  readonly host: string | null;
  readonly source: LogSource;
  /** The log's file name, in the log folder of `host`'s `baton up`. */
  readonly file: string;
  readonly offset: number;
  readonly next: number;
  /** How many bytes the source holds now: `next < size` means there is more to read at once. */
  readonly size: number;
  /** The attempt's run is over (the job's status and attempt say so): its log grows no more. */
  readonly ended: boolean;
  /** Where the whole log is, when this process cannot read it; null when the bytes are the file's. */
  readonly note: string | null;
  readonly bytes: Uint8Array;
  /**
   * The output stream's run (source `stream` alone): a follower that printed another run's bytes
   * (a run given back and rerun on another host, whose log starts anew) starts again at 0.
   */
  readonly run?: StreamRun | null;
}

/** Most bytes one read answers: a bigger log is read in several. */
export const LOG_CHUNK_MAX = 1024 * 1024;

/**
 * The attempt a read means: the one asked for, else the latest run. A follower of a queued job
 * means the run to come (the next attempt: a run given back shares its number with its rerun),
 * and may ask for it. `ran` is the highest attempt the ledger shows run: a run given back on a
 * graceful stop lowered `job.attempt`, and its output stays readable by its number. An attempt the
 * job never had, or none at all, is not found (exit 4).
 */
export function logAttempt(job: Job, asked: number | undefined, follow: boolean, ran = job.attempt): number {
  const coming = Math.max(follow && job.status === 'queued' ? job.attempt + 1 : job.attempt, ran);
  const attempt = asked ?? coming;
  if (attempt >= 1 && attempt <= coming) return attempt;
  if (coming === 0) {
    throw new NotFoundError(
      'job',
      `${job.id} output`,
      `job ${job.id} has not run yet: \`baton job log ${job.id} --follow\` waits for its output`,
    );
  }
  throw new NotFoundError(
    'job',
    `${job.id} attempt ${attempt}`,
    coming === 1
      ? `job ${job.id} has had attempt 1 alone: leave --attempt out, or give it 1`
      : `job ${job.id} has had attempts 1 to ${coming}: give --attempt one of those, or leave it out`,
  );
}

/**
 * Whether the attempt's run is over: a later attempt was placed, or the job is no longer held
 * at this attempt (it ended, or went back to the queue after a crash). A run given back on a
 * graceful stop goes back to the queue one attempt lower: its rerun, same number, is still to come.
 */
export function attemptEnded(job: Pick<Job, 'status' | 'attempt'>, attempt: number): boolean {
  if (job.attempt > attempt) return true;
  if (job.attempt === attempt) return job.status !== 'claimed' && job.status !== 'running';
  return isTerminalJobState(job.status);
}

/**
 * The oldest a file of the attempt's log name may be and still be its own, in ms: until its agent
 * runs, a file of that name last written before the job was queued is another job's (of a
 * database made afresh and used from the same directory), which the runner sets aside as it
 * spawns the agent (daemon/job-log.ts), after the job is marked running and its workspace made.
 * Once the agent is attached (a pid), the file is the run's, whatever the clocks say.
 */
export function logNotBefore(
  job: Pick<Job, 'status' | 'attempt' | 'queuedAt' | 'pid'>,
  attempt: number,
): number {
  const spawned = attempt === job.attempt && job.status !== 'claimed' && job.pid !== null;
  return attempt < job.attempt || spawned ? 0 : job.queuedAt;
}

/** The host that ran an attempt, from the job's runs (its latest from the job row). */
export function attemptHost(job: Job, runs: readonly JobRun[], attempt: number): string | null {
  const run = runs.findLast((each) => each.attempt === attempt);
  return run?.host ?? (attempt === job.attempt ? job.host : null);
}

/**
 * Why a process has no file for an attempt, and where its output is: on the disk of the host
 * that ran it, or nowhere Baton wrote (an attempt run in pull mode, with no agent of `baton up`).
 */
export function elsewhereNote(job: Job, runs: readonly JobRun[], attempt: number): string {
  const started = attempt < job.attempt || (attempt === job.attempt && job.status !== 'claimed');
  if (!started) return `attempt ${attempt} of job ${job.id} has not started`;
  const run = runs.findLast((each) => each.attempt === attempt);
  const spawned = run === undefined ? job.pid !== null : run.pid !== null;
  if (!spawned) return 'no log: no agent of `baton up` ran in this attempt';
  const host = attemptHost(job, runs, attempt) ?? 'the runner';
  return (
    `the output is in ${jobLogName({ id: job.id, attempt })} on ${host}'s disk ` +
    '(its log folder), which this process cannot read'
  );
}
