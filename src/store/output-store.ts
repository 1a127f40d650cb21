/**
 * The output stream in storage (core/output-stream.ts, docs/decisions/0029-live-output.md): rows of
 * a run's output keyed by (job, attempt, byte offset of the log file), written by the runner that
 * runs it and read by anyone who may read the job's output.
 */
import type { OutputRead, OutputRow } from '../core/output-stream.js';

export interface OutputAppendParams {
  /** The runner's session: a row is written only while its run's job is this session's. */
  readonly session: number;
  /** Rows of one or more runs (core/output-stream.ts outputRows), at most one per offset of a run. */
  readonly rows: readonly OutputRow[];
}

export interface OutputReadParams {
  readonly job: number;
  readonly attempt: number;
  /** The rows that end past this byte. */
  readonly offset: number;
}

export interface OutputTrimParams {
  readonly keep: number;
  readonly endedBefore: number;
  /** Finished jobs read per batch of the walks (output-trim.ts TRIM_BATCH); tests make it small. */
  readonly batch?: number;
}

export interface OutputStore {
  readonly output: {
    /**
     * Appends the rows of each run whose job is still held (claimed or running) by `session` at
     * the row's attempt and epoch; a row of any other run changes nothing (a run taken over, or
     * ended by someone else). In the same step, for each run written: what the attempt's older
     * runs (lower epochs) kept from the run's first new byte on is dropped (a rerun on another
     * host whose file starts anew), as is every earlier attempt of the job (the last attempt's
     * window alone is kept), and the rows that end `keep` bytes or more before the run's newest
     * byte. Answers the jobs whose rows were written. One statement on PostgreSQL, one commit
     * without its own fsync on SQLite.
     */
    append(params: OutputAppendParams): Promise<readonly number[]>;
    /** The attempt's rows that end past `offset` (at most the window), by offset, and the stream's end. */
    read(params: OutputReadParams): Promise<OutputRead>;
    /**
     * The leader's trim: every attempt no run holds (its job ended, was cancelled or taken over, or
     * is at a later attempt) keeps its last `keep` bytes (a row at a time), and the jobs that ended
     * before `endedBefore` (ms) keep none. Answers the rows deleted. A pass reads the live jobs and
     * walks the finished ones from where the store's last pass stopped (output-trim.ts), in
     * batches, so it reads what changed, not every row kept.
     */
    trim(params: OutputTrimParams): Promise<number>;
  };
}
