/**
 * The CLI's own output, written to file descriptors 1 and 2 directly. `process.stdout` on a pipe (as
 * a script or an agent reads a call's answer) builds a net.Socket: node:net, its bindings and
 * streams, about 6 ms of a fresh process that prints one line (2-3 ms when node:net is loaded
 * anyway, as pg does), where `fs.writeSync` takes 0.3 ms (docs/decisions/0007). A write the
 * descriptor does not take at once (EAGAIN: a non-blocking pipe that is full) goes to the stream
 * from then on, in order. A reader that stops early (`baton queue list | head -1`, `baton audit
 * --follow | head`) ends the process quietly, with the exit code it had, whichever way the write
 * went. A long-running command that holds something (`baton up`: a session, the lease, jobs) says
 * how it stops instead (stopOnClosedOutput): a closed stdout is then no clean stop, but a stop as
 * SIGTERM makes, one line on stderr, and exit 8 (docs/decisions/0057).
 *
 * Anything else may still write to `process.stdout` or `process.stderr` (commander's help, a
 * command that streams): watchStdio notes each stream built, and `drained` waits until what was
 * written to them has left the process, before the process ends by process.exit().
 */
import { writeSync } from 'node:fs';
import { EXIT_OK, EXIT_OUTPUT_CLOSED } from './exit-codes.js';

const OUT = 1;
const ERR = 2;

/** The streams built so far, by descriptor. */
const built = new Map<number, NodeJS.WriteStream>();
/**
 * Descriptors whose writes go to their stream: both, unless the process entry watches them (runCli
 * called in a test's process writes as before, where the test may catch it); and one whose
 * descriptor did not take a write at once, to keep the order.
 */
const streamed = new Set<number>([OUT, ERR]);

/** How the running command stops when its stdout is closed; null: the process ends quietly. */
let stopOnClose: (() => void) | null = null;
/** Set once stdout was closed under a command that stops on it: what it writes there is dropped. */
let outputClosed = false;

function outputGone(): void {
  // Said already (a write queued before it failed too, or once the command no longer watches).
  if (outputClosed) return;
  if (stopOnClose === null) process.exit(process.exitCode ?? EXIT_OK);
  outputClosed = true;
  stopOnClose();
}

/**
 * Said by a long-running command (`baton up`, `baton serve`, `baton github sync --every`): once
 * the reader of its stdout goes away (found at the next line it writes), one line on stderr says
 * so and how it stops (`stopping`), `stop` is called (what SIGTERM does), and the call exits
 * EXIT_OUTPUT_CLOSED whatever it returns, unless it fails with a code of its own. Until `release`.
 */
export function stopOnClosedOutput(command: string, stopping: string, stop: () => void): () => void {
  stopOnClose = () => {
    writeErr(
      `baton: ${command}: its standard output was closed (the reader of its output went away): ` +
        `${stopping}; exit ${EXIT_OUTPUT_CLOSED} — send its output to a file or a reader that stays\n`,
    );
    stop();
  };
  return () => {
    stopOnClose = null;
  };
}

/** The call's exit code: `code`, or EXIT_OUTPUT_CLOSED for a success cut short by a closed stdout. */
export function exitCodeAfterOutput(code: number): number {
  return outputClosed && code === EXIT_OK ? EXIT_OUTPUT_CLOSED : code;
}

/**
 * Notes each of process.stdout and process.stderr when something first asks for it, gives stdout
 * the early-reader handling, and from then on writes the CLI's output to the descriptors. Called
 * once, by the process entry.
 */
export function watchStdio(): void {
  streamed.clear();
  for (const [name, fd] of [
    ['stdout', OUT],
    ['stderr', ERR],
  ] as const) {
    const original = Object.getOwnPropertyDescriptor(process, name) as
      { configurable?: boolean; get?: (this: void) => unknown } | undefined;
    const getter = original?.get;
    if (original?.configurable !== true || getter === undefined) {
      onBuilt(fd, process[name]);
      continue;
    }
    const build = (): unknown => Reflect.apply(getter, process, []);
    Object.defineProperty(process, name, {
      ...original,
      get: () => {
        const stream = build() as NodeJS.WriteStream;
        if (!built.has(fd)) onBuilt(fd, stream);
        return stream;
      },
    });
  }
}

function onBuilt(fd: number, stream: NodeJS.WriteStream): void {
  built.set(fd, stream);
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    // stderr closed too (`baton up 2>&1 | head -1`): nothing is left to say it on.
    if (fd === OUT) outputGone();
  });
}

/** Writes `text` (or bytes as they are) to stdout (1) or stderr (2), whole and in order. */
function write(fd: number, text: string | Uint8Array): void {
  if (fd === OUT && outputClosed) return;
  if (streamed.has(fd)) {
    void (fd === OUT ? process.stdout : process.stderr).write(text);
    return;
  }
  let bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text);
  try {
    while (bytes.length > 0) bytes = bytes.subarray(writeSync(fd, bytes));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EPIPE' && fd === OUT) outputGone();
    if (code === 'EPIPE') return;
    // Full (EAGAIN) or anything else: the stream takes the rest, and says so if it cannot.
    streamed.add(fd);
    void (fd === OUT ? process.stdout : process.stderr).write(bytes);
  }
}

export const writeOut = (text: string): void => write(OUT, text);
export const writeErr = (text: string): void => write(ERR, text);
/** Bytes to stdout as they are: a job's log (`baton job log`), byte for byte. */
export const writeOutBytes = (bytes: Uint8Array): void => write(OUT, bytes);

/** Resolves once what was written to the streams built so far has left the process. */
export async function drained(): Promise<void> {
  for (const stream of built.values()) {
    // A stream whose reader went away (its stdout, under `baton up`) never drains.
    if (!stream.destroyed && stream.writableLength > 0)
      await new Promise((resolve) => stream.once('drain', resolve));
  }
}
