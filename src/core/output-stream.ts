/**
 * The output stream (docs/decisions/0029-live-output.md): the runner copies what each run's log
 * file gained into the database about once a second, as chunks keyed by (job, attempt, byte
 * offset in the file), so a reader on any host sees a run's output while it runs. The rules, as
 * pure functions: how a flush is cut into rows, how much of an attempt is kept, and how a reader
 * puts the rows it read back together.
 */

/** How often the runner copies its runs' new output into the database. */
export const OUTPUT_FLUSH_MS = 1000;
/** Bytes of a running attempt kept in the database, counted back from its newest byte. */
export const OUTPUT_WINDOW = 1024 * 1024;
/** Bytes kept once the run has ended (its last flush): the whole log stays on the runner's disk. */
export const OUTPUT_KEEP_ENDED = 64 * 1024;
/** Most bytes in one row: the window is trimmed a row at a time, so it overshoots by one row at most. */
const OUTPUT_ROW_MAX = 64 * 1024;

/** New output of one run, as the runner sends it: bytes of the log file from `offset`. */
export interface OutputRun {
  readonly job: number;
  readonly attempt: number;
  /** The job's epoch of this run: the write is fenced by it (and by the runner's session). */
  readonly epoch: number;
  readonly offset: number;
  readonly bytes: Uint8Array;
  /** The run's last flush: what is kept of it shrinks to OUTPUT_KEEP_ENDED. */
  readonly ended: boolean;
}

/** One stored row of a run's output. */
export interface OutputRow {
  readonly job: number;
  readonly attempt: number;
  readonly epoch: number;
  readonly offset: number;
  readonly bytes: Uint8Array;
  /** The bytes of the attempt to keep after this write, counted back from its newest byte. */
  readonly keep: number;
}

/** A flush's rows: each run's bytes cut into rows of at most OUTPUT_ROW_MAX (a run's last flush: one at least). */
export function outputRows(runs: readonly OutputRun[]): OutputRow[] {
  const rows: OutputRow[] = [];
  for (const run of runs) {
    const keep = run.ended ? OUTPUT_KEEP_ENDED : OUTPUT_WINDOW;
    // A last flush with nothing new still shrinks what is kept: an empty row, never stored.
    if (run.bytes.length === 0 && run.ended) rows.push({ ...run, keep });
    for (let at = 0; at < run.bytes.length; at += OUTPUT_ROW_MAX) {
      const bytes = run.bytes.subarray(at, at + OUTPUT_ROW_MAX);
      rows.push({
        job: run.job,
        attempt: run.attempt,
        epoch: run.epoch,
        offset: run.offset + at,
        bytes,
        keep,
      });
    }
  }
  return rows;
}

/**
 * Which bytes of what a log file gained a flush sends: all of it, or its last OUTPUT_WINDOW bytes
 * when more came in a second than the window keeps (what comes before would be trimmed at once).
 */
export function flushRange(sent: number, size: number): { readonly from: number; readonly length: number } {
  const from = Math.max(sent, size - OUTPUT_WINDOW);
  return { from, length: Math.max(0, size - from) };
}

/** What a store read answers: the rows of an attempt that end past the offset, by offset. */
export interface OutputRead {
  readonly rows: readonly { readonly offset: number; readonly bytes: Uint8Array }[];
  /** The stream's end (its newest byte + 1), 0 when nothing of the attempt is kept. */
  readonly size: number;
  /**
   * The newest run whose rows are kept (the highest epoch: a rerun of a run given back) and the
   * first byte its rows keep; null when nothing is kept. A rerun on another host starts anew at 0.
   */
  readonly run: StreamRun | null;
}

/** The run whose output an attempt's stream holds: its job epoch, and the first byte its rows keep. */
export interface StreamRun {
  readonly epoch: number;
  readonly from: number;
}

/** Bytes put back together from `offset`: `from` is where they start (past `offset` when the window moved on). */
export interface OutputSpan {
  readonly from: number;
  readonly bytes: Uint8Array;
}

/**
 * The contiguous bytes the rows hold from `offset` on, at most `max`: from the first row's start
 * when the window has moved past `offset`, and up to the first gap (a flush that skipped bytes);
 * the next read starts at the gap and is told it skipped. Rows may overlap (a rerun's flush):
 * their bytes are the same file's at the same offsets.
 */
export function joinOutput(read: OutputRead, offset: number, max: number): OutputSpan | null {
  const first = read.rows.find((row) => row.offset + row.bytes.length > offset);
  if (first === undefined) return null;
  const from = Math.max(offset, first.offset);
  const parts: Uint8Array[] = [];
  let at = from;
  for (const row of read.rows) {
    const end = row.offset + row.bytes.length;
    if (end <= at) continue;
    if (row.offset > at || at - from >= max) break;
    const part = row.bytes.subarray(at - row.offset, at - row.offset + max - (at - from));
    parts.push(part);
    at += part.length;
  }
  return { from, bytes: Buffer.concat(parts) };
}

/**
 * Where the last `lines` lines of `bytes` start (a line ends with a newline; an unfinished last
 * line counts as one); null when `bytes` holds no more than that many: the caller reads further
 * back, or prints them all when `bytes` starts at the log's start.
 */
export function lastLinesStart(bytes: Uint8Array, lines: number): number | null {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end -= 1;
  let seen = 0;
  for (let at = end - 1; at >= 0; at--) {
    if (bytes[at] !== 0x0a) continue;
    seen += 1;
    if (seen === lines) return at + 1;
  }
  return null;
}

/** How far into text cut from a stream's middle its first line end is looked for. */
const FIRST_LINE_MAX = 4096;

/**
 * Where text cut from the middle of a log begins to read well: after its first line end (when one
 * comes within FIRST_LINE_MAX bytes), else at its first byte that begins a UTF-8 character, so it
 * never starts with half a line or U+FFFD.
 */
export function textStart(bytes: Uint8Array): number {
  const newline = bytes.subarray(0, FIRST_LINE_MAX).indexOf(0x0a);
  if (newline !== -1 && newline + 1 < bytes.length) return newline + 1;
  let at = 0;
  while (at < bytes.length && at < 4 && ((bytes[at] ?? 0) & 0xc0) === 0x80) at += 1;
  return at;
}
