/**
 * `baton job log <id> [--attempt N] [--follow] [--tail N]`: a job's output, byte for byte, from the
 * log file of its run where this process can read it (`.baton/logs` here, or the log folder of the
 * `baton up` that serves BATON_URL), else the output stream its runner copies into the database as
 * it runs (docs/decisions/0029), else the last lines the database keeps, with one line on stderr
 * saying where the whole log is. `--follow` reads on from the last byte printed, every POLL_MS
 * while nothing is new, and exits 0 once the run has ended and its log is printed whole. A
 * follower whose run's host stops reporting (its `baton up` killed or paused) says so once on
 * stderr and follows on: the run ends when a leader takes the job back (decision 0034's
 * amendment). Locally
 * and over HTTP it is the same loop over the same reads (coordinator/job-log.ts,
 * GET /v1/jobs/{id}/log); docs/decisions/0026-job-log.md.
 */
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { parseJobLog } from '../../coordinator/job-log.js';
import { BatonError } from '../../core/errors.js';
import { age } from '../../core/host-liveness.js';
import type { LogChunk, LogSource } from '../../core/job-log.js';
import { lastLinesStart, type StreamRun } from '../../core/output-stream.js';
import { jsonText, terminalText, type Output } from '../output.js';
import type { CliApi } from '../remote-api.js';
import { stateDir, withApi, type GlobalOptions } from '../run.js';
import { drained, writeErr, writeOut, writeOutBytes } from '../stdio.js';

/** How long a follower waits for more output before it asks again. */
const POLL_MS = 250;
/** Reads with nothing new before a follower says why it sees nothing (the run is elsewhere). */
const QUIET_READS_BEFORE_NOTE = 8;
/** Reads with nothing new between two looks at the run's host (about 2 s): one read of the hosts. */
const QUIET_READS_PER_LOOK = 8;

interface LogOptions {
  readonly attempt?: string;
  readonly follow?: boolean;
  readonly tail?: string;
}

export function registerJobLog(job: Command): void {
  job
    .command('log <id>')
    .description("print a job's output (its latest attempt's log), byte for byte")
    .option('--attempt <n>', 'the attempt to print (default the latest)')
    .option('-f, --follow', 'print on as the log grows; ends once the run has ended (Ctrl-C stops it)')
    .option('--tail <n>', 'print only the last n lines (then, with --follow, what comes)')
    .action((id: string, options: LogOptions, cmd: Command) => {
      const follow = options.follow === true;
      // Bad input is refused before the database or the API is reached.
      const { attempt, tail } = parseJobLog({ id, attempt: options.attempt, follow, tail: options.tail });
      const logDir = join(stateDir(cmd.optsWithGlobals<GlobalOptions>()), 'logs');
      return withApi(cmd, (baton, out) =>
        new LogReader(baton, out, { id, attempt, follow, tail }, logDir).run(),
      );
    });
}

interface Asked {
  readonly id: string;
  readonly attempt: number | undefined;
  readonly follow: boolean;
  readonly tail: number | undefined;
}

/** Bytes of the log from `from`, and the last chunk read for them. */
interface Span {
  readonly from: number;
  readonly bytes: Buffer;
  readonly last: LogChunk;
}

/** One run of the command: reads chunks from offset 0 on, and prints each as it comes. */
class LogReader {
  private attempt: number | undefined;
  private offset = 0;
  /** Where the bytes printed so far came from: a follower never mixes a file with the database's tail. */
  private source: LogSource = 'none';
  private quiet = 0;
  private said = false;
  /** Reads with nothing new while the run goes on, for the looks at its host. */
  private idle = 0;
  /** The host said silent or down, once: the run's end then says what became of the job. */
  private runnerGone = false;
  /** That host. */
  private goneHost: string | null = null;
  private readonly decoder = new StringDecoder('utf8');
  private readonly chunks: Uint8Array[] = [];
  /** The last chunk read: none before the first read. */
  private last: LogChunk | null = null;
  /** The stream's run whose bytes were printed: null before any, or when they are not the stream's. */
  private printedRun: StreamRun | null = null;
  /** The host whose run's bytes were printed: null before any. */
  private printedHost: string | null = null;

  constructor(
    private readonly baton: CliApi,
    private readonly out: Output,
    private readonly asked: Asked,
    private readonly logDir: string,
  ) {
    this.attempt = asked.attempt;
  }

  async run(): Promise<void> {
    const { follow, tail } = this.asked;
    if (tail !== undefined) {
      await this.printTail(tail);
      // Not following: the last lines as they were, not what the run printed since.
      const last = this.last;
      if (!follow && last !== null)
        return this.end(last.source === 'stream' ? { ...last, note: null } : last, null);
    }
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
      if (this.rerun(chunk)) continue;
      if (chunk.bytes.length > 0) {
        // The stream's window moved past what was asked: say how much was skipped, and where it is.
        if (chunk.source === 'stream' && chunk.note !== null && !this.out.json)
          writeErr(`baton: job ${chunk.job} attempt ${chunk.attempt}: ${terminalText(chunk.note)}\n`);
        this.source = chunk.source;
        this.offset = chunk.next;
        this.printedRun = chunk.run ?? this.printedRun;
        this.printedHost = chunk.host;
        await this.print(chunk);
        continue;
      }
      if (!follow || chunk.ended) return this.end(chunk, null);
      this.waiting(chunk);
      await this.watchRunner(chunk);
      await sleep(POLL_MS);
    }
  }

  /**
   * Prints the last `lines` lines of what the attempt's log (or stream) holds now, and leaves the
   * offset at its end for the loop to go on from. The same reads as the loop's, locally and over
   * HTTP: the first from 0 gives the size; while the bytes read back from the end hold too few
   * lines, it reads four times as far back, to the log's start (or the stream window's).
   */
  private async printTail(lines: number): Promise<void> {
    const first = await this.read();
    this.attempt = first.attempt;
    if (first.bytes.length === 0) return; // nothing yet: a follower prints all that comes
    let span: Span = { from: first.offset, bytes: Buffer.from(first.bytes), last: first };
    for (let back = 64 * 1024; first.next < first.size; back *= 4) {
      const from = Math.max(first.offset, first.size - back);
      span = await this.readTo(from, first.size);
      // At the log's start, or the stream answered from its window's start (which may have moved
      // on since the first read): nothing older is kept.
      if (from <= first.offset || span.from > from || lastLinesStart(span.bytes, lines) !== null) break;
    }
    const start = lastLinesStart(span.bytes, lines) ?? 0;
    this.source = span.last.source;
    this.printedRun = span.last.run ?? null;
    this.printedHost = span.last.host;
    this.offset = span.from + span.bytes.length;
    const bytes = span.bytes.subarray(start);
    await this.print({ ...span.last, offset: span.from + start, next: this.offset, bytes });
  }

  /**
   * Whether the stream's run changed under what was printed so that its bytes do not follow them:
   * a run given back and rerun on another host, whose log starts anew at 0. Said in one line on
   * stderr, and printed again from 0 (as a replaced file is). A rerun on the same host appends to
   * the same file: its bytes start past what was printed, and follow on.
   */
  private rerun(chunk: LogChunk): boolean {
    if (!this.rerunOfStream(chunk) && !this.rerunInFile(chunk)) return false;
    const where = chunk.host === null ? '' : ` on ${chunk.host}`;
    writeErr(
      `baton: job ${chunk.job} attempt ${chunk.attempt} was run again${where}: printing its output from its start\n`,
    );
    this.offset = 0;
    return true;
  }

  private rerunOfStream(chunk: LogChunk): boolean {
    const run = chunk.run ?? null;
    const printed = this.printedRun;
    if (chunk.source !== 'stream' || run === null || printed === null || run.epoch === printed.epoch)
      return false;
    this.printedRun = run;
    return run.from < this.offset;
  }

  /**
   * The stream of a run on another host was printed, and the bytes now come from this directory's
   * log file: the file of a rerun here, whose log started anew, not the rest of what was printed.
   */
  private rerunInFile(chunk: LogChunk): boolean {
    if (chunk.source !== 'file' || this.source !== 'stream' || chunk.host === this.printedHost) return false;
    this.printedHost = chunk.host;
    this.printedRun = null;
    return this.offset > 0;
  }

  /** The bytes from `from` up to `end` at least (or as far as there are), in as many reads as it takes. */
  private async readTo(from: number, end: number): Promise<Span> {
    this.offset = from;
    let last = await this.read();
    let start = last.offset; // past `from` when the stream's window has moved on
    const parts = [last.bytes];
    while (last.next < end && last.bytes.length > 0) {
      this.offset = last.next;
      const read = await this.read();
      if (read.offset !== last.next) {
        // The window moved past what was read: the bytes before are not followed by these.
        start = read.offset;
        parts.length = 0;
      }
      parts.push(read.bytes);
      last = read;
    }
    return { from: start, bytes: Buffer.concat(parts), last };
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

  /**
   * A follower that has seen nothing for a while says once why, if the run's log is not here: it
   * follows the output stream its runner copies into the database, which has nothing yet. Not the
   * read's note (`… which this process cannot read`), which is a one-off read's: said to a
   * follower, it read as if nothing would come, and the stream's lines then came all the same.
   */
  private waiting(chunk: LogChunk): void {
    if (this.said || this.out.json || chunk.note === null) return;
    // Said once its agent runs elsewhere: not before it is placed or while its agent starts, and
    // only when its runner has streamed nothing for a while (an older runner, or a silent agent).
    if (!chunk.note.startsWith('the output is in') || chunk.source !== 'none') return;
    this.quiet += 1;
    if (this.quiet < QUIET_READS_BEFORE_NOTE) return;
    this.said = true;
    const host = terminalText(chunk.host ?? 'another host');
    writeErr(
      `baton: job ${chunk.job} attempt ${chunk.attempt} runs on ${host} and has streamed no output yet: ` +
        `following its output stream in the database until the run ends (the whole log is ` +
        `${terminalText(chunk.file)} on ${host}'s disk)\n`,
    );
  }

  /**
   * A follower of a run whose host no longer reports (the same judgement as `baton hosts`: its
   * runner's session past its TTL, or ended) would wait in silence for lines that never come: it
   * says so once on stderr, and follows on. The run ends when a leader's sweep takes the job back
   * (or the host's `baton up`, started again, does), and the follower with it, exit 0. A look that
   * fails (an older server, a token that may not read hosts) says nothing: the follow goes on.
   */
  private async watchRunner(chunk: LogChunk): Promise<void> {
    const name = chunk.host;
    if (this.runnerGone || name === null || this.idle++ % QUIET_READS_PER_LOOK !== 0) return;
    const host = (await this.baton.cluster.hosts().catch(() => [])).find((each) => each.name === name);
    // Only a host judged silent or down: a server too old to judge (no liveness) says nothing.
    if (host === undefined || (host.liveness !== 'silent' && host.liveness !== 'down')) return;
    this.runnerGone = true;
    this.goneHost = name;
    const state =
      host.liveness === 'silent'
        ? `has been silent for ${age(host.lastReportAgeMs)} (its \`baton up\` is dead or paused)`
        : 'is down (its `baton up` stopped or was rescued)';
    // Given back already (a graceful stop, or a rescue): no rescue to wait for, nor a host to start.
    const job = await this.baton.getJob(String(chunk.job)).catch(() => null);
    if (job !== null && (job.status === 'queued' || (job.host !== null && job.host !== name))) {
      const why = job.reason === null ? '' : ` (${terminalText(job.reason)})`;
      writeErr(
        `baton: host ${name} ${state}; job ${chunk.job} was given back to the queue${why}: following on ` +
          'until it runs again or ends\n',
      );
      return;
    }
    writeErr(
      `baton: the runner of job ${chunk.job} on host ${name} ${state}; its job awaits rescue by a leading ` +
        `\`baton up\` (or start \`baton up --host ${name}\` on that machine again): following on until the run ends\n`,
    );
  }

  /** After the runner was said gone: what became of the job, once its run has ended. */
  private async afterRescue(chunk: LogChunk): Promise<void> {
    if (!this.runnerGone || !chunk.ended || this.out.json) return;
    const job = await this.baton.getJob(String(chunk.job)).catch(() => null);
    // Run to its end by another host's runner, whose output was printed: nothing to add.
    if (job === null || (job.status !== 'queued' && job.host !== null && job.host !== this.goneHost)) return;
    const next = job.status === 'queued' ? `; \`baton job log ${job.id} --follow\` follows its next run` : '';
    const why = job.reason === null ? '' : ` (${terminalText(job.reason)})`;
    writeErr(
      `baton: job ${job.id} attempt ${chunk.attempt} ended without its runner: ${job.status}${why}${next}\n`,
    );
  }

  private async end(chunk: LogChunk, gone: string | null): Promise<void> {
    await this.afterRescue(chunk);
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
