/**
 * Whether a process holds a SQLite database's write lock, read from the kernel's lock table. In WAL
 * mode the writer holds a POSIX lock on byte 120 of the `-shm` file (WAL_WRITE_LOCK) from its
 * BEGIN IMMEDIATE to its COMMIT. A process stopped while it holds it stops every writer of the
 * database until it runs again: a whole-database outage, as a kill inside a write is until the
 * kernel drops the dead process's locks. SQLite's one writer at a time allows nothing else.
 */
import { readFileSync, statSync } from 'node:fs';

/** The `-shm` byte of WAL_WRITE_LOCK (sqlite3 wal.c: WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK). */
const WAL_WRITE_LOCK_BYTE = '120';

export function holdsSqliteWriteLock(dbFile: string, pid: number): boolean {
  let inode: number;
  try {
    inode = statSync(`${dbFile}-shm`).ino;
  } catch {
    return false; // no -shm: no WAL writer has ever opened it
  }
  // `1: POSIX  ADVISORY  WRITE 6517 00:1f:1234 120 120`; a waiter's line has `->` after the id.
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .some(
      ([, type, , mode, holder, file, start]) =>
        type === 'POSIX' &&
        mode === 'WRITE' &&
        holder === String(pid) &&
        file?.endsWith(`:${inode}`) === true &&
        start === WAL_WRITE_LOCK_BYTE,
    );
}

/** Whether the process has stopped (state T in /proc/PID/stat): a SIGSTOP is delivered later. */
export function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^\S+ \(.*\) [Tt] /s.test(stat);
  } catch {
    return false;
  }
}
