/**
 * One read of a job's output from a byte offset (`baton job log`, `GET /v1/jobs/{id}/log`): the
 * log file where this process can read it (the log folder of a `baton up` on this machine), else
 * the last lines the database keeps of an ended run, else nothing with a note on where the output
 * is. The job is read before the file, so a read that says the run ended has the whole file: the
 * runner reports a run ended only once its log is closed (daemon/agent-run.ts).
 */
import { join } from 'node:path';
import type { AuditEntry } from '../core/audit-event.js';
import { jobRuns, type JobRun } from '../core/job-attempts.js';
import type { Job } from '../core/job.js';
import {
  attemptEnded,
  attemptHost,
  elsewhereNote,
  jobLogName,
  logAttempt,
  logNotBefore,
  LOG_CHUNK_MAX,
  type LogChunk,
} from '../core/job-log.js';
import { InvalidInputError } from '../core/errors.js';
import { validateId } from '../core/validate.js';
import { readLogRange } from '../os/log-file.js';
import type { AuditInput } from './inputs.js';

export interface JobLogInput {
  readonly id: unknown;
  /** The attempt to read; the latest (or, following a queued job, the coming one) when left out. */
  readonly attempt?: unknown;
  /** The byte to read from, 0 when left out. */
  readonly offset?: unknown;
  /** Following: a queued job's coming attempt may be asked for, and is meant when none is. */
  readonly follow?: boolean | undefined;
}

interface JobLogParams {
  readonly id: number;
  readonly attempt: number | undefined;
  readonly offset: number;
  readonly follow: boolean;
}

/** A whole number of `min` or more, from text or a number; InvalidInputError naming the fix. */
function atLeast(what: string, value: unknown, min: number, hint: string): number {
  const parsed = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof parsed === 'number' && Number.isSafeInteger(parsed) && parsed >= min) return parsed;
  throw new InvalidInputError(
    `${what} must be a whole number of ${min} or more, got ${JSON.stringify(value)}`,
    hint,
  );
}

/** Checks a read's raw input: a job id, an attempt of 1 or more, an offset of 0 or more. */
export function parseJobLog(input: JobLogInput): JobLogParams {
  const attempt = (value: unknown): number =>
    atLeast(
      '--attempt',
      value,
      1,
      'give an attempt `baton job show` lists, or leave --attempt out for the latest',
    );
  const offset = (value: unknown): number =>
    atLeast('offset', value, 0, 'give the byte to read from: 0, or the `next` of the last read');
  return {
    id: validateId('job', input.id),
    attempt: input.attempt === undefined ? undefined : attempt(input.attempt),
    offset: input.offset === undefined ? 0 : offset(input.offset),
    follow: input.follow === true,
  };
}

/** What a read needs of the use-case API: the job, and its ledger rows for its runs. */
export interface JobLogReads {
  getJob(id: unknown): Promise<Job>;
  audit(input: AuditInput): Promise<readonly AuditEntry[]>;
}

/** Reads one chunk of an attempt's output from `offset`; `logDir` is where this process finds logs. */
export async function readJobLog(
  reads: JobLogReads,
  logDir: string | undefined,
  input: JobLogInput,
): Promise<LogChunk> {
  const params = parseJobLog(input);
  const job = await reads.getJob(params.id);
  let runs: readonly JobRun[] | null = null;
  const runsOf = async (): Promise<readonly JobRun[]> =>
    (runs ??= jobRuns(await reads.audit({ job: String(job.id) })));
  // Queued again: a run given back on a graceful stop may have lowered job.attempt below its own.
  const ran =
    job.status === 'queued'
      ? Math.max(job.attempt, ...(await runsOf()).map((run) => run.attempt))
      : job.attempt;
  const attempt = logAttempt(job, params.attempt, params.follow, ran);
  const ended = attemptEnded(job, attempt);
  const file = jobLogName({ id: job.id, attempt });
  const { offset } = params;
  const host =
    attempt === job.attempt && job.host !== null ? job.host : attemptHost(job, await runsOf(), attempt);
  const base = { job: job.id, attempt, host, file, offset, ended };
  const range =
    logDir === undefined
      ? null
      : readLogRange(join(logDir, file), offset, LOG_CHUNK_MAX, logNotBefore(job, attempt));
  if (range !== null) {
    const next = offset + range.bytes.length;
    return { ...base, source: 'file', next, size: range.size, note: null, bytes: range.bytes };
  }
  const note = elsewhereNote(job, await runsOf(), attempt);
  // The database keeps the last lines of the job's latest run alone, once it has ended.
  const tail = attempt === job.attempt && ended ? job.outputTail : null;
  if (tail === null) return { ...base, source: 'none', next: offset, size: 0, note, bytes: new Uint8Array() };
  const all = Buffer.from(tail, 'utf8');
  const bytes = all.subarray(offset, offset + LOG_CHUNK_MAX);
  return { ...base, source: 'database', next: offset + bytes.length, size: all.length, note, bytes };
}
