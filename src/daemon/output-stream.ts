/**
 * The runner's half of the output stream (core/output-stream.ts, docs/decisions/0029-live-output.md):
 * about once a second it reads what each of its runs' log files gained since the last flush and
 * writes it to the database, every run with new output in one store call (one statement on
 * PostgreSQL); a quiet host writes nothing. A run's last flush comes after its log file is closed
 * and before its end is reported, so a reader that sees the run ended has read all it will get.
 * The runner writes, not the agent: an agent never reaches the database.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { jobLogName } from '../core/job-log.js';
import type { Job } from '../core/job.js';
import { flushRange, outputRows, type OutputRun } from '../core/output-stream.js';
import { readLogRange } from '../os/log-file.js';
import type { Store } from '../store/store.js';

interface Watched {
  readonly job: number;
  readonly attempt: number;
  readonly epoch: number;
  readonly path: string;
  /** The file's bytes before this are in the database (or were skipped past the window). */
  sent: number;
}

export interface OutputStreamerDeps {
  readonly store: Pick<Store, 'output'>;
  /** The runner's session: the writes are fenced by it. */
  readonly session: number;
  readonly logDir: string;
  readonly log: (line: string) => void;
}

/** The size of a file, 0 when there is none (yet). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

export class OutputStreamer {
  private readonly runs = new Map<number, Watched>();
  /** Flushes go one at a time: a run's offsets move only after its write. */
  private flushing: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(private readonly deps: OutputStreamerDeps) {}

  /**
   * Streams a run's log from now on, once its agent is spawned (its log opened, a foreign file of
   * its name set aside). A file there already holds an earlier run of the same attempt, given back
   * on a graceful stop, whose own last flush sent it: this run's bytes start at its end.
   */
  watch(job: Pick<Job, 'id' | 'attempt' | 'epoch'>): void {
    const path = join(this.deps.logDir, jobLogName(job));
    this.runs.set(job.id, { job: job.id, attempt: job.attempt, epoch: job.epoch, path, sent: sizeOf(path) });
  }

  /** Writes what every run's log gained since the last flush, in one store call; nothing when none did. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      await this.send([...this.runs.values()], false);
    });
    return this.flushing;
  }

  /**
   * The run's last flush, its log closed: what is kept of it shrinks to its last bytes. Tried
   * twice: no later flush sends a run no longer watched. A second call does nothing.
   */
  end(job: Pick<Job, 'id'>): Promise<void> {
    const watched = this.runs.get(job.id);
    if (watched === undefined) return Promise.resolve();
    this.runs.delete(job.id);
    this.flushing = this.flushing.then(async () => {
      if (!(await this.send([watched], true))) await this.send([watched], true);
    });
    return this.flushing;
  }

  /** One flush, true once written; it never rejects, so a failed one leaves the next (and a run's last) to go on. */
  private async send(runs: readonly Watched[], ended: boolean): Promise<boolean> {
    try {
      await this.sendOrThrow(runs, ended);
      this.failing = false;
      return true;
    } catch (error) {
      // Sent again with what comes next; the log file on this host has it all meanwhile.
      if (!this.failing)
        this.deps.log(`output stream: not written to the database (${String(error)}); retrying`);
      this.failing = true;
      return false;
    }
  }

  private async sendOrThrow(runs: readonly Watched[], ended: boolean): Promise<void> {
    const out: { watched: Watched; run: OutputRun }[] = [];
    for (const watched of runs) {
      const { from, length } = flushRange(watched.sent, sizeOf(watched.path));
      const bytes =
        (length === 0 ? null : readLogRange(watched.path, from, length, 0)?.bytes) ?? Buffer.alloc(0);
      // Nothing new, nothing written; but a run's last flush trims what is kept of what it sent.
      if (bytes.length === 0 && !(ended && watched.sent > 0)) continue;
      const { job, attempt, epoch } = watched;
      out.push({ watched, run: { job, attempt, epoch, offset: from, bytes, ended } });
    }
    if (out.length === 0) return;
    const rows = outputRows(out.map((each) => each.run));
    await this.deps.store.output.append({ session: this.deps.session, rows });
    for (const { watched, run } of out) watched.sent = run.offset + run.bytes.length;
  }
}
