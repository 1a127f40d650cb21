/**
 * A job's numbers sent as one text column, for a statement that answers with a thousand jobs
 * (jobs.batch). pg decodes every column of every row on its own (a string from the socket's
 * buffer through a call into C++, then its type's parser, then a property of the row object), and
 * that per-column work was most of the client's CPU in the bench's drain: about 15 µs of main
 * thread per job, with ~40 columns per job (decision 0017, "Session 21"). The job's 17 numbers
 * (times as Instants, msOf) plus the statement's own ones go as one `array_to_string` of bigints,
 * read in one pass here; its texts stay columns of their own, since any text may hold the separator.
 */
import type { Job, JobState } from '../../core/job.js';
import { msOf } from './rows.js';

/** The job's number columns, in the order they are packed; the times as their Instants. */
const NUMBERS = [
  'id',
  'priority',
  'queued_at',
  'ram_mb',
  'attempt',
  'attempt_max',
  'epoch',
  'session_id',
  'claimed_at',
  'started_at',
  'finished_at',
  'exit_code',
  'run_after',
  'term',
  'agent_session_id',
  'pid',
  'time_limit_ms',
] as const;

const TIMES: ReadonlySet<string> = new Set([
  'queued_at',
  'claimed_at',
  'started_at',
  'finished_at',
  'run_after',
]);

/**
 * SQL: the numbers `extra` (SQL expressions, read first) and the job's numbers of CTE
 * row `table`, as one text `nums` (NULL as an empty element); then the job's texts. `key` is the
 * task's key, an expression. Read with toJobPacked.
 */
export function jobPacked(table: string, extra: readonly string[], key: string): string {
  const numbers = NUMBERS.map((field) =>
    TIMES.has(field) ? msOf(`${table}.${field}`) : `${table}.${field}`,
  );
  return `array_to_string(ARRAY[${[...extra, ...numbers].join(', ')}]::bigint[], ',', '') AS nums,
    ${table}.status, ${table}.command, ${table}.host, ${table}.reason, ${table}.output_tail, ${key} AS key`;
}

/** A row of jobPacked's columns. */
export interface JobPackedRow {
  nums: string;
  status: string;
  command: string | null;
  host: string | null;
  reason: string | null;
  output_tail: string | null;
  key: string;
}

const COMMA = 44;
const MINUS = 45;
const ZERO = 48;

/**
 * Reads a row's packed numbers in order, one pass over the text: no array and no string per
 * number (String#split made both, and the garbage collector then took a third of the main thread).
 */
export class Packed {
  private at = 0;

  constructor(private readonly text: string) {}

  /** The next number, or null for an empty element (SQL NULL). */
  next(): number | null {
    const { text } = this;
    let value = 0;
    let sign = 1;
    let digits = 0;
    let code = 0;
    while (this.at < text.length && (code = text.charCodeAt(this.at++)) !== COMMA) {
      if (code === MINUS && digits === 0) sign = -1;
      else if (code >= ZERO && code <= ZERO + 9) {
        value = value * 10 + (code - ZERO);
        digits++;
      } else throw new Error(`invariant broken: packed job numbers hold ${JSON.stringify(text)}`);
    }
    if (digits === 0) return null;
    if (!Number.isSafeInteger(value))
      throw new Error(`invariant broken: a packed bigint exceeds 2^53 in ${text}`);
    return sign * value;
  }

  /** The next number, which the column's NOT NULL guarantees. */
  required(): number {
    const value = this.next();
    if (value === null) throw new Error(`invariant broken: a NOT NULL job number is NULL in ${this.text}`);
    return value;
  }
}

/**
 * The Job of a jobPacked row, its numbers read from `numbers` past the statement's own: the same
 * object, keys in the same order, as rows.ts jobOf makes of the columns (an object literal is
 * evaluated in its order, which is the packing's).
 */
export function toJobPacked(row: JobPackedRow, numbers: Packed): Job {
  return {
    id: numbers.required(),
    key: row.key,
    status: row.status as JobState,
    priority: numbers.required(),
    queuedAt: numbers.required(),
    ramMb: numbers.next(),
    command: row.command,
    attempt: numbers.required(),
    attemptMax: numbers.required(),
    epoch: numbers.required(),
    session: numbers.next(),
    host: row.host,
    claimedAt: numbers.next(),
    startedAt: numbers.next(),
    finishedAt: numbers.next(),
    exitCode: numbers.next(),
    reason: row.reason,
    runAfter: numbers.required(),
    term: numbers.next(),
    agentSession: numbers.next(),
    pid: numbers.next(),
    outputTail: row.output_tail,
    timeLimitMs: numbers.next(),
  };
}
