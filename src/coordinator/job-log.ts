/**
 * One read of a job's output from a byte offset (`baton job log`, `GET /v1/jobs/{id}/log`): the
 * log file where this process can read it (the log folder of a `baton up` on this machine), else
 * the output stream the runner copies into the database as the run goes (docs/decisions/0029),
 * else the last lines the database keeps of a failed run, else nothing with a note on where the
 * output is. The job is read before the file, so a read that says the run ended has the whole
 * file: the runner reports a run ended only once its log is closed and its last output is in the
 * stream (daemon/agent-run.ts).
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
import { joinOutput, OUTPUT_KEEP_ENDED, OUTPUT_WINDOW, type OutputRead } from '../core/output-stream.js';
import { logHost, readLogRange } from '../os/log-file.js';
import type { OutputReadParams } from '../store/output-store.js';
import type { AuditInput } from './inputs.js';
import { quoted } from '../core/text.js';

export interface JobLogInput {
  readonly id: unknown;
  /** The attempt to read; the latest (or, following a queued job, the coming one) when left out. */
  readonly attempt?: unknown;
  /** The byte to read from, 0 when left out. */
  readonly offset?: unknown;
  /** Following: a queued job's coming attempt may be asked for, and is meant when none is. */
  readonly follow?: boolean | undefined;
  /** `baton job log --tail`: how many of the last lines to print (the CLI reads them). */
  readonly tail?: unknown;
}

interface JobLogParams {
  readonly id: number;
  readonly attempt: number | undefined;
  readonly offset: number;
  readonly follow: boolean;
  readonly tail: number | undefined;
}

/** A whole number of `min` or more, from text or a number; InvalidInputError naming the fix. */
function atLeast(what: string, value: unknown, min: number, hint: string): number {
  const parsed = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof parsed === 'number' && Number.isSafeInteger(parsed) && parsed >= min) return parsed;
  throw new InvalidInputError(`${what} must be a whole number of ${min} or more, got ${quoted(value)}`, hint);
}

/** How a surface names the fields of a read: the CLI's flags by default, the API's query fields. */
interface JobLogNames {
  readonly attempt: string;
  readonly tail: string;
}
const JOB_LOG_FLAGS: JobLogNames = { attempt: '--attempt', tail: '--tail' };

/**
 * Checks a read's raw input: a job id, an attempt of 1 or more, an offset of 0 or more, a tail of
 * 1 or more; a refusal names the field as `names` does (the HTTP route: `attempt`, not `--attempt`).
 */
export function parseJobLog(input: JobLogInput, names: JobLogNames = JOB_LOG_FLAGS): JobLogParams {
  const attempt = (value: unknown): number =>
    atLeast(
      names.attempt,
      value,
      1,
      `give an attempt the job lists (\`baton job show\`), or leave ${names.attempt} out for the latest`,
    );
  const offset = (value: unknown): number =>
    atLeast('offset', value, 0, 'give the byte to read from: 0, or the `next` of the last read');
  return {
    id: validateId('job', input.id),
    attempt: input.attempt === undefined ? undefined : attempt(input.attempt),
    offset: input.offset === undefined ? 0 : offset(input.offset),
    follow: input.follow === true,
    tail:
      input.tail === undefined
        ? undefined
        : atLeast(
            names.tail,
            input.tail,
            1,
            `give how many of the last lines to print, such as ${names.tail} 20`,
          ),
  };
}

/** What a read needs of the use-case API: the job, its ledger rows for its runs, and its output stream. */
export interface JobLogReads {
  getJob(id: unknown): Promise<Job>;
  audit(input: AuditInput): Promise<readonly AuditEntry[]>;
  readOutput(params: OutputReadParams): Promise<OutputRead>;
}

/**
 * A chunk of the output stream (core/output-stream.ts): the bytes the runner copied into the
 * database from the base's offset, or from the window's start when the window has moved past it,
 * which `note` says (how many bytes were skipped, and where the whole log is).
 */
function streamChunk(
  base: Omit<LogChunk, 'source' | 'next' | 'size' | 'note' | 'bytes'>,
  read: OutputRead,
  where: string,
): LogChunk {
  const span = joinOutput(read, base.offset, LOG_CHUNK_MAX);
  const from = span?.from ?? base.offset;
  const bytes = span?.bytes ?? new Uint8Array();
  const skipped = from - base.offset;
  const note =
    skipped === 0
      ? null
      : `${skipped} bytes skipped: the database keeps the last ${OUTPUT_WINDOW} bytes of a running attempt ` +
        `(${OUTPUT_KEEP_ENDED} once it ended); ${where}`;
  const next = from + bytes.length;
  return { ...base, source: 'stream', offset: from, next, size: read.size, note, bytes, run: read.run };
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
  // A file here of a run now on another host is dead (its run was given back, and rerun there).
  const elsewhere = host !== null && logDir !== undefined && (logHost(logDir) ?? host) !== host;
  const range =
    logDir === undefined || elsewhere
      ? null
      : readLogRange(join(logDir, file), offset, LOG_CHUNK_MAX, logNotBefore(job, attempt));
  if (range !== null) {
    const next = offset + range.bytes.length;
    return { ...base, source: 'file', next, size: range.size, note: null, bytes: range.bytes };
  }
  const note = elsewhereNote(job, await runsOf(), attempt);
  const stream = await reads.readOutput({ job: job.id, attempt, offset });
  if (stream.size > 0) return streamChunk(base, stream, note);
  // Nothing streamed (a run of an older Baton, or in pull mode): the kept tail of a failed latest run.
  const tail = attempt === job.attempt && ended ? job.outputTail : null;
  if (tail === null) return { ...base, source: 'none', next: offset, size: 0, note, bytes: new Uint8Array() };
  const all = Buffer.from(tail, 'utf8');
  const bytes = all.subarray(offset, offset + LOG_CHUNK_MAX);
  return { ...base, source: 'database', next: offset + bytes.length, size: all.length, note, bytes };
}
