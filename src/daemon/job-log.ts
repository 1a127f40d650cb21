/**
 * One job's log file (issue 14, item 4). Two faults are absorbed here, so that neither touches the
 * runner or the other jobs of the host:
 *
 * - A write that fails (ENOSPC on a full disk, EIO, a log directory that cannot be made) once
 *   crashed `baton up`: the write stream's `error` had no listener. Now the job goes on, its
 *   further output is dropped (its last lines are still kept in memory for the job's record), a
 *   marker is appended to the log when the disk takes it again, and `problem()` names the cause
 *   for the job's reason.
 * - A job that writes without end (2 GB in six seconds) is capped at `maxBytes`: the first half
 *   goes to the file as it comes, the last half is kept in memory, and when the job ends the file
 *   gets a marker saying how much was cut, then that tail. Memory per job stays under maxBytes / 2.
 */
import {
  appendFileSync,
  createWriteStream,
  mkdirSync,
  renameSync,
  lstatSync,
  type Stats,
  type WriteStream,
} from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../core/time.js';
import type { Job } from '../core/job.js';

/**
 * A log file of this name written before the job was even queued belongs to another job that had
 * the same id: one of a database made afresh (or another database) used from the same directory.
 * Appended to, its output read as this job's. It is moved aside, kept under a name the pruner
 * knows (`job-1-attempt-1.before-<ms>.log`), and this run's log starts empty.
 */
function setAsideForeign(path: string, queuedAt: number): void {
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch {
    return; // no file yet: the usual case
  }
  const mtimeMs = stat.mtimeMs;
  // A link or a device put there on purpose is left alone.
  if (stat.isFile() && mtimeMs < queuedAt)
    renameSync(path, path.replace(/\.log$/, `.before-${Math.floor(mtimeMs)}.log`));
}

/** Default cap of one job's log (`baton up --log-max-mb`). */
export const LOG_MAX_MB_DEFAULT = 32;

export class JobLog {
  private readonly stream: WriteStream | null = null;
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private cutBytes = 0;
  private droppedBytes = 0;
  private failure: string | null = null;
  private ended = false;
  /** The file closed, its cut marker and tail written: what a second call to end() waits for too. */
  private closed: Promise<void> = Promise.resolve();
  private readonly path: string;

  constructor(
    dir: string,
    name: string,
    private readonly maxBytes: number,
    /** Told once, when a write first fails. */
    private readonly onProblem: (problem: string) => void = () => undefined,
    /** When the job was queued: a file last written before then is another job's (below). */
    queuedAt?: number,
  ) {
    this.path = join(dir, name);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (queuedAt !== undefined) setAsideForeign(this.path, queuedAt);
      // Appended to: a run its runner gave back on shutdown keeps its attempt's number, and its
      // output stays in the file ahead of the next run's.
      this.stream = createWriteStream(this.path, { flags: 'a', mode: 0o600 });
      this.stream.on('error', (error) => this.fail(error));
    } catch (error) {
      this.fail(error);
    }
  }

  /** Why output was dropped, or null when all of it went to the file (or to its cap). */
  problem(): string | null {
    return this.failure === null ? null : `log ${this.path}: ${this.failure}; output after it dropped`;
  }

  /**
   * What the cap cut from the log's middle, or null when nothing was: the job's reason carries it,
   * so `baton job show` says so on any machine, not only the runner's, which has the file.
   */
  cut(): string | null {
    if (this.cutBytes === 0) return null;
    const cap = `${this.maxBytes} bytes (baton up --log-max-mb)`;
    return `log ${this.path} cut at its cap of ${cap}: ${this.cutBytes} bytes of output dropped from its middle`;
  }

  write(chunk: Buffer): void {
    if (this.ended) return; // output read after the agent's exit: its log is closed
    if (this.failure !== null || this.stream === null) {
      this.droppedBytes += chunk.length;
      return;
    }
    const headMax = Math.ceil(this.maxBytes / 2);
    const room = headMax - this.headBytes;
    if (room > 0) {
      const head = chunk.subarray(0, room);
      this.stream.write(head);
      this.headBytes += head.length;
      if (head.length === chunk.length) return;
      this.stream.write(
        `\n[baton: this log reached half its cap of ${this.maxBytes} bytes; ` +
          'what follows is kept in memory and its end written here when the job ends]\n',
      );
      chunk = chunk.subarray(room);
    }
    this.keepTail(chunk, this.maxBytes - headMax);
  }

  /**
   * A stream that failed says so in `errored` at once, but emits `error` only on a later tick, and
   * end's callback may come first: with ERR_STREAM_DESTROYED when the write failed before end was
   * called, or with the write's own error when it failed after (the file still opening on a slow
   * disk). Either way the cause to name is the stream's first error (found by CI, job-log.test.ts).
   */
  private noteErrored(): void {
    const errored = this.stream?.errored;
    if (errored) this.fail(errored);
  }

  /** Writes the cut marker and the tail, and closes the file. */
  end(): Promise<void> {
    if (this.ended) return this.closed;
    this.ended = true;
    this.closed = this.close();
    return this.closed;
  }

  private close(): Promise<void> {
    this.noteErrored();
    const stream = this.stream;
    if (stream === null || this.failure !== null) return Promise.resolve(this.markDropped());
    if (this.cutBytes > 0 || this.tailBytes > 0) {
      const cut = this.cutBytes > 0 ? `${this.cutBytes} bytes cut here; ` : '';
      stream.write(`[baton: ${cut}the last ${this.tailBytes} bytes of output follow]\n`);
      for (const chunk of this.tail) stream.write(chunk);
      this.tail = [];
    }
    return new Promise<void>((resolve) => {
      stream.end(() => {
        this.noteErrored();
        resolve();
      });
      stream.once('error', () => resolve());
    }).then(() => this.markDropped());
  }

  private keepTail(chunk: Buffer, tailMax: number): void {
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes > tailMax) {
      const first = this.tail[0];
      if (first === undefined) break;
      const over = this.tailBytes - tailMax;
      if (first.length <= over) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.cutBytes += first.length;
      } else {
        this.tail[0] = first.subarray(over);
        this.tailBytes -= over;
        this.cutBytes += over;
      }
    }
  }

  private fail(error: unknown): void {
    if (this.failure !== null) return;
    const errno = error as NodeJS.ErrnoException;
    this.failure = errno.code !== undefined ? `${errno.code} (${errno.message})` : String(error);
    this.droppedBytes += this.tailBytes;
    this.tail = [];
    this.tailBytes = 0;
    this.onProblem(this.problem() ?? this.failure);
  }

  /** Best effort: on a disk that is still full the marker is lost too, and the job's reason says it. */
  private markDropped(): void {
    if (this.failure === null) return;
    try {
      appendFileSync(
        this.path,
        `\n[baton: ${this.droppedBytes} bytes of output dropped after a write error: ${this.failure}]\n`,
      );
    } catch {
      // Nothing more to do: problem() carries the cause to the job's record.
    }
  }
}

/** The job's reason, with the log's problem (a full disk) added when there was one. */
export function withLogProblem(reason: string | null, problem: string | null): string | null {
  if (problem === null) return reason;
  return reason === null ? problem : `${reason}; ${problem}`;
}

/** How long a run's end waits for its log file to close before it is reported anyway. */
const LOG_CLOSE_WAIT_MS = 10_000;

/**
 * Waits for a run's log file to close (JobLog.end: the cap's marker and tail written), so that a
 * follower (`baton job log --follow`) that sees the run ended reads it whole; but at most
 * LOG_CLOSE_WAIT_MS: a disk that stopped answering must not keep the job running, and its slot
 * taken, for ever. When it did not close in time, the runner's log (`log`) says so.
 */
export async function logClosedWithin(
  closed: Promise<void> | undefined,
  clock: Clock,
  job: Pick<Job, 'id' | 'key'>,
  log: (line: string) => void,
): Promise<void> {
  if (closed === undefined) return;
  const waiting = new AbortController();
  let late = true;
  const done = closed.then(() => void (late = false)).finally(() => waiting.abort());
  await Promise.race([done, clock.sleep(LOG_CLOSE_WAIT_MS, waiting.signal)]);
  waiting.abort();
  if (!late) return;
  log(
    `job ${job.id} ${job.key}: its log file was not closed ${LOG_CLOSE_WAIT_MS / 1000} s after its agent ` +
      'exited (a slow or stuck disk): the run is reported ended anyway; `baton job log` may miss its last bytes',
  );
}
