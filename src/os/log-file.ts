/**
 * Reads a job's log file (`baton job log`, its HTTP route, the dashboard's job page). A file of
 * the log's name last written before the job was queued is another job's, of a database made
 * afresh and used from the same directory (daemon/job-log.ts sets it aside when the run starts):
 * until then it is read as no file, never as this job's output.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The file beside a log folder (`.baton/logs.host`) that names the host whose `baton up` writes
 * the folder's logs: beside it, not in it, which holds job logs alone.
 */
const hostMark = (dir: string): string => `${resolve(dir)}.host`;

/**
 * Says which host's runner writes this log folder (`baton up`, at start), so a reader here can
 * tell its own runs' files from those of runs now on another host: a run given back and rerun on
 * another host leaves a dead file of its attempt's name here. Answers why it could not, or null.
 */
export function markLogHost(dir: string, host: string): string | null {
  try {
    mkdirSync(dirname(resolve(dir)), { recursive: true, mode: 0o700 });
    writeFileSync(hostMark(dir), `${host}\n`, { mode: 0o600 });
    return null;
  } catch (error) {
    return `log folder ${dir}: its host not written beside it (${String(error)})`;
  }
}

/** The host whose runner writes the folder's logs; null when none said (a runner of an older Baton). */
export function logHost(dir: string): string | null {
  try {
    return readFileSync(hostMark(dir), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** Bytes read from a file, and the file's size when they were read. */
export interface FileRange {
  readonly bytes: Buffer;
  readonly size: number;
}

/**
 * How much older than `notBefore` a file may look and still count: the kernel stamps files from a
 * coarse clock (a tick behind the time Node reads), and the queue time may be another machine's
 * (PostgreSQL's), so a file written just after its job was queued can read a few ms older. A file
 * of a database made afresh is older by far more than this.
 */
const MTIME_SLACK_MS = 1_000;

/** Opens the file for reading unless it cannot be read here or is older than `notBefore` (ms). */
function openLog(path: string, notBefore: number): { fd: number; size: number } | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  const stat = fstatSync(fd);
  if (!stat.isFile() || stat.mtimeMs < notBefore - MTIME_SLACK_MS) {
    closeSync(fd);
    return null;
  }
  return { fd, size: stat.size };
}

/** Up to `max` bytes of the log from `offset`; null when there is no such file of this job here. */
export function readLogRange(path: string, offset: number, max: number, notBefore: number): FileRange | null {
  const opened = openLog(path, notBefore);
  if (opened === null) return null;
  const { fd, size } = opened;
  try {
    const length = Math.max(0, Math.min(size - offset, max));
    const bytes = Buffer.alloc(length);
    const read = length === 0 ? 0 : readSync(fd, bytes, 0, length, offset);
    return { bytes: bytes.subarray(0, read), size };
  } finally {
    closeSync(fd);
  }
}

/** The last `max` bytes of the log as text; null when there is no such file of this job here. */
export function readLogTail(path: string, max: number, notBefore: number): string | null {
  const size = readLogRange(path, 0, 0, notBefore)?.size;
  if (size === undefined) return null;
  return readLogRange(path, Math.max(0, size - max), max, notBefore)?.bytes.toString('utf8') ?? null;
}
