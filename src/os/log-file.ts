/**
 * Reads a job's log file (`baton job log`, its HTTP route, the dashboard's job page). A file of
 * the log's name last written before the job was queued is another job's, of a database made
 * afresh and used from the same directory (daemon/job-log.ts sets it aside when the run starts):
 * until then it is read as no file, never as this job's output.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Bytes read from a file, and the file's size when they were read. */
export interface FileRange {
  readonly bytes: Buffer;
  readonly size: number;
}

/** Opens the file for reading unless it cannot be read here or is older than `notBefore` (ms). */
function openLog(path: string, notBefore: number): { fd: number; size: number } | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  const stat = fstatSync(fd);
  if (!stat.isFile() || stat.mtimeMs < notBefore) {
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
