/**
 * `baton job log <id> [--attempt N] [--follow]`: a job's output, byte for byte, from the log file
 * of its run where this process can read it (`.baton/logs` here, or the log folder of the `baton
 * up` that serves BATON_URL), else the last lines the database keeps, with one line on stderr
 * saying where the whole log is. `--follow` reads on from the last byte printed, every POLL_MS
 * while nothing is new, and exits 0 once the run has ended and its log is printed whole. Locally
 * and over HTTP it is the same loop over the same reads (coordinator/job-log.ts,
 * GET /v1/jobs/{id}/log); docs/decisions/0026-job-log.md.
 */
import { resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { parseJobLog } from '../../coordinator/job-log.js';
import { BatonError } from '../../core/errors.js';
import type { LogChunk, LogSource } from '../../core/job-log.js';
import { jsonText, terminalText, type Output } from '../output.js';
import type { CliApi } from '../remote-api.js';
import { withApi } from '../run.js';
import { drained, writeErr, writeOut, writeOutBytes } from '../stdio.js';

/** How long a follower waits for more output before it asks again. */
const POLL_MS = 250;
/** Reads with nothing new before a follower says why it sees nothing (the run is elsewhere). */
const QUIET_READS_BEFORE_NOTE = 8;

interface LogOptions {
  readonly attempt?: string;
  readonly follow?: boolean;
}

export function registerJobLog(job: Command): void {
  job
    .command('log <id>')
    .description("print a job's output (its latest attempt's log), byte for byte")
    .option('--attempt <n>', 'the attempt to print (default the latest)')
    .option('-f, --follow', 'print on as the log grows; ends once the run has ended (Ctrl-C stops it)')
    .action((id: string, options: LogOptions, cmd: Command) => {
      const follow = options.follow === true;
      // Bad input is refused before the database or the API is reached.
      const { attempt } = parseJobLog({ id, attempt: options.attempt, follow });
      return withApi(cmd, (baton, out) =>
        new LogReader(baton, out, { id, attempt, follow }, resolve('.baton', 'logs')).run(),
      );
    });
}

interface Asked {
  readonly id: string;
  readonly attempt: number | undefined;
  readonly follow: boolean;
}

/** One run of the command: reads chunks from offset 0 on, and prints each as it comes. */
class LogReader {
  private attempt: number | undefined;
  private offset = 0;
  /** Where the bytes printed so far came from: a follower never mixes a file with the database's tail. */
  private source: LogSource = 'none';
  private quiet = 0;
  private said = false;
  private readonly decoder = new StringDecoder('utf8');
  private readonly chunks: Uint8Array[] = [];
  /** The last chunk read: none before the first read. */
  private last: LogChunk | null = null;

  constructor(
    private readonly baton: CliApi,
    private readonly out: Output,
    private readonly asked: Asked,
    private readonly logDir: string,
  ) {
    this.attempt = asked.attempt;
  }

  async run(): Promise<void> {
    const { follow } = this.asked;
    for (;;) {
      const chunk = await this.read();
      this.attempt = chunk.attempt; // the first read names it; a follower stays on it
      if (this.source === 'file' && chunk.source !== 'file') return this.end(chunk, 'its log file is gone');
      if (this.source === 'file' && chunk.size < this.offset) {
        // Shorter than what was printed: not the file read before (set aside, or made anew).
        writeErr(`baton: job ${chunk.job}'s log file was replaced: printing the new one from its start\n`);
        this.offset = 0;
        continue;
      }
      if (chunk.bytes.length > 0) {
        this.source = chunk.source;
        this.offset = chunk.next;
        await this.print(chunk);
        continue;
      }
      if (!follow || chunk.ended) return this.end(chunk, null);
      this.waiting(chunk);
      await sleep(POLL_MS);
    }
  }

  /**
   * The next chunk. The attempt a follower waits for may never come (the job was cancelled while
   * queued): refused as not found once the first read has named it, that ends the follow, exit 0.
   */
  private async read(): Promise<LogChunk> {
    const { id, follow } = this.asked;
    const last = this.last;
    try {
      this.last = await this.baton.jobLog(
        { id, attempt: this.attempt, offset: this.offset, follow },
        this.logDir,
      );
      return this.last;
    } catch (error) {
      if (last === null || !(error instanceof BatonError) || error.code !== 'not_found') throw error;
      const note = `job ${last.job} ended before attempt ${last.attempt} ran`;
      return {
        ...last,
        source: 'none',
        next: this.offset,
        size: 0,
        ended: true,
        note,
        bytes: new Uint8Array(),
      };
    }
  }

  private async print(chunk: LogChunk): Promise<void> {
    if (!this.out.json) {
      writeOutBytes(chunk.bytes);
      await drained();
    } else if (this.asked.follow) {
      const text = this.decoder.write(Buffer.from(chunk.bytes));
      const line = {
        job: chunk.job,
        attempt: chunk.attempt,
        source: chunk.source,
        offset: chunk.offset,
        text,
      };
      writeOut(`${jsonText(line)}\n`);
      await drained();
    } else {
      this.chunks.push(chunk.bytes);
    }
  }

  /** A follower that has seen nothing for a while says once why, if the run's log is not here. */
  private waiting(chunk: LogChunk): void {
    this.quiet += 1;
    if (this.said || this.out.json || chunk.note === null || this.quiet < QUIET_READS_BEFORE_NOTE) return;
    // Said once its agent runs elsewhere: not before it is placed or while its agent starts.
    if (!chunk.note.startsWith('the output is in')) return;
    this.said = true;
    writeErr(`baton: waiting for job ${chunk.job}'s run to end: ${terminalText(chunk.note)}\n`);
  }

  private end(chunk: LogChunk, gone: string | null): void {
    const note = gone === null ? chunk.note : `${gone}: ${chunk.note ?? ''}`;
    const { job, attempt, host, file } = chunk;
    const source = this.source;
    if (this.out.json) {
      const text = Buffer.concat(this.chunks).toString('utf8');
      const ended = { job, attempt, host, source, file, ended: chunk.ended, note };
      if (this.asked.follow) writeOut(`${jsonText({ ...ended, text: this.decoder.end() })}\n`);
      else this.out.result({ ...ended, text }, () => []);
      return;
    }
    if (note === null || source === 'file') return;
    const kept = source === 'database' ? 'above: the last lines the database keeps; ' : '';
    writeErr(`baton: job ${job} attempt ${attempt}: ${kept}${terminalText(note)}\n`);
  }
}
