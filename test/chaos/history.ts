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
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
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
