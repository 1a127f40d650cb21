/**
 * Files that make Baton's processes take turns on a repository's worktrees, in its common git
 * directory. git itself takes no lock over `.git/worktrees`: `git worktree add` writes a new
 * entry's files one by one (gitdir, HEAD, then commondir, each created empty and then written),
 * and any git that lists the worktrees meanwhile (`worktree list`, another `worktree add`) reads
 * the half-written entry and dies ("failed to read .git/worktrees/<id>/commondir"; CI54's fleet
 * scenario, two `baton up` on one machine). Decision 0044.
 *
 * - The lock of the repository's worktrees (`baton-worktrees-lock`): held by whoever adds,
 *   retires, archives or prunes a worktree of it (worktree.ts, inside its per-process queue).
 * - The claim on retiring one worktree (`baton-retiring-<digest>`), taken under the lock: a
 *   Baton of before the lock takes only the claim, and still takes turns with this one.
 *
 * Each is a file created only if absent (O_EXCL) naming its holder's pid, host and, where /proc
 * tells, the process's start time. Whoever creates it goes ahead, the others poll until it is
 * deleted. A file whose process is gone (killed with SIGKILL, its pid reused by another process
 * since) is taken over, so nothing stays locked; only a live holder is waited for, and one that
 * holds on past WAIT_MS_MAX is reported in one line naming the file to delete.
 */
import { createHash } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';

const POLL_MS = 50;
/** Adding or retiring a worktree takes seconds; a holder this slow is stuck, and an operator has to look. */
const WAIT_MS_MAX = 120_000;

/** Runs `work` holding the lock of the worktrees of the repository whose common git directory is given. */
export function whileWorktreesLocked<T>(commonDir: string, work: () => Promise<T>): Promise<T> {
  return whileHeld(join(commonDir, 'baton-worktrees-lock'), `the worktrees of ${commonDir} are`, work);
}

/** Runs `work` holding the claim on retiring the worktree at `path` (as git lists it). */
export function whileClaimed<T>(commonDir: string, path: string, work: () => Promise<T>): Promise<T> {
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 16);
  return whileHeld(join(commonDir, `baton-retiring-${digest}`), `the worktree ${path} is`, work);
}

/**
 * Holds `file` while `work` runs. A process takes each file once at a time (worktree.ts runs one
 * worktree change per repository at a time), so a file naming this very pid and host is a
 * leftover of an earlier life with the same pid (a restarted container's pid 1).
 */
async function whileHeld<T>(file: string, what: string, work: () => Promise<T>): Promise<T> {
  const mine = holderText();
  await acquire(file, mine, what);
  try {
    return await work();
  } finally {
    if (holderOf(file) === mine) rmSync(file, { force: true });
  }
}

/** `<pid> <host>`, and ` <start time>` where /proc gives it. */
function holderText(): string {
  const start = startTime(process.pid);
  return `${process.pid} ${hostname()}${start === null ? '' : ` ${start}`}`;
}

async function acquire(file: string, mine: string, what: string): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (create(file, mine)) return;
    const holder = holderOf(file);
    if (holder !== null && (samePid(holder, mine) || !alive(holder))) {
      takeOver(file, holder);
    } else if (Date.now() - started > WAIT_MS_MAX) {
      const pid = /^\d+/.exec(holder ?? '')?.[0] ?? '?';
      throw new ConflictError(
        `${what} still being changed by process ${pid} after 2 minutes`,
        `if no baton process is at it, delete ${file} and try again`,
      );
    } else {
      await new Promise((done) => setTimeout(done, POLL_MS));
    }
  }
}

/** Creates the file; false if it exists. */
function create(file: string, mine: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, mine);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The file's text, or null when there is none. */
function holderOf(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

const HOLDER = /^(\d+) (\S+)(?: (\d+))?$/;

const samePid = (holder: string, mine: string): boolean =>
  HOLDER.exec(holder)?.slice(1, 3).join(' ') === HOLDER.exec(mine)?.slice(1, 3).join(' ');

/**
 * Only a process of this host can be known dead; an empty file is one being written. A holder
 * whose recorded start time differs from its pid's is dead, its pid reused by another process.
 */
function alive(holder: string): boolean {
  const match = HOLDER.exec(holder);
  if (match === null || match[2] !== hostname()) return true;
  try {
    process.kill(Number(match[1]), 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  const start = match[3] === undefined ? null : startTime(Number(match[1]));
  return start === null || start === match[3];
}

/** The process's start time in clock ticks since boot (/proc/<pid>/stat, field 22), or null. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Deletes a dead holder's file. Moved aside first, not deleted outright: another waiter may have
 * taken it over and created it anew since `stale` was read, and that live file is put back.
 */
function takeOver(file: string, stale: string): void {
  const aside = `${file}.stale-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (holderOf(aside) !== stale) linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(aside, { force: true });
  }
}
