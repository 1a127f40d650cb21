/**
 * Client-side histories: one JSON line per operation phase, written with a synchronous write on
 * an O_APPEND descriptor so a line is on disk before the next step and survives SIGKILL.
 *
 *   invoke  the operation is about to be sent
 *   ok      it happened, as the database acknowledged
 *   fail    it definitely did not happen (a refusal: fenced, held, not found, bad input)
 *   info    unknown: the request may have been applied (timeout, connection lost after sending)
 *
 * An outcome line repeats its invoke's fields (key, session, epoch), so each line stands alone.
 *
 * Times are the real wall clock (performance.timeOrigin + now), which the clock-offset preload
 * does not shift, so histories of processes with skewed clocks line up.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export type Phase = 'invoke' | 'ok' | 'fail' | 'info';

export interface HistoryLine {
  /** Real wall-clock milliseconds. */
  readonly t: number;
  /** The process (worker-2, up-a, nemesis) and its pid. */
  readonly p: string;
  readonly pid: number;
  /** Operation number within the process; invoke and its outcome share it. */
  readonly n: number;
  readonly op: string;
  readonly phase: Phase;
  readonly [field: string]: unknown;
}

export const realNow = (): number => performance.timeOrigin + performance.now();

export class HistoryWriter {
  private readonly fd: number;
  private seq = 0;

  constructor(
    path: string,
    private readonly process: string,
  ) {
    this.fd = openSync(path, 'a');
  }

  /** Writes an invoke line; returns the operation number for its outcome. */
  invoke(op: string, fields: Record<string, unknown> = {}): number {
    const n = ++this.seq;
    this.line(n, op, 'invoke', fields);
    return n;
  }

  line(n: number, op: string, phase: Phase, fields: Record<string, unknown> = {}): void {
    const line = { t: Math.round(realNow()), p: this.process, pid: process.pid, n, op, phase, ...fields };
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Every complete line of a history file; a torn last line (SIGKILL mid-write) is skipped. */
export function readHistory(path: string): HistoryLine[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const out: HistoryLine[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      out.push(JSON.parse(raw) as HistoryLine);
    } catch {
      // A line cut by SIGKILL: its operation stays without an outcome, which reads as unknown.
    }
  }
  return out;
}

/** The complete lines in the last few kilobytes of a history file. */
export function tailLines(path: string, bytes = 8192): HistoryLine[] {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    readSync(fd, buffer, 0, buffer.length, start);
    const lines = buffer
      .toString('utf8')
      .split('\n')
      .slice(start === 0 ? 0 : 1);
    return lines.flatMap((l) => {
      try {
        return l.trim() === '' ? [] : [JSON.parse(l) as HistoryLine];
      } catch {
        return [];
      }
    });
  } finally {
    closeSync(fd);
  }
}

/**
 * The outcome of the first operation a process invoked at or after `since` under `session`
 * (real wall-clock ms), or its first unknown outcome after `since` (it gave up and exits), or
 * null when neither is in the lines yet.
 */
export function resumedAttempt(
  lines: readonly HistoryLine[],
  pid: number,
  session: number,
  since: number,
): HistoryLine | null {
  const invoked = new Set<number>();
  for (const l of lines) {
    if (l.pid !== pid || l.t < since) continue;
    if (l.phase === 'info') return l;
    if (l.phase === 'invoke') invoked.add(l.n);
    else if (invoked.has(l.n) && l['session'] === session) return l;
  }
  return null;
}
