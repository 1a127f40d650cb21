/**
 * One process at a time retires a given worktree. Several `baton up` on one machine may set out to
 * retire the same one at once (one's sweep, another's next claim of the task). Side by side, each
 * snapshot read a checkout the other was deleting, each wrote an archive ref of its own, and the
 * removals failed half-way: a temporary index written into `.git/worktrees/<id>` while one process's
 * `git worktree remove` deleted it made that remove fail ("Directory not empty") after it had
 * unregistered the worktree, so it reported someone else's removal, as did every other process.
 *
 * The claim is a file in the repository's common git directory, created only if absent (O_EXCL):
 * whoever creates it retires the worktree, the others wait until it is deleted. It names the
 * holder's pid and host, so a claim left by a process that died is taken over.
 */
import { createHash } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';

const POLL_MS = 50;
/** A retirement takes seconds; a holder this slow is stuck, and an operator has to look. */
const WAIT_MS_MAX = 120_000;

/** Runs `work` holding the claim on retiring the worktree at `path` (as git lists it). */
export async function whileClaimed<T>(commonDir: string, path: string, work: () => Promise<T>): Promise<T> {
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 16);
  const claim = join(commonDir, `baton-retiring-${digest}`);
  const mine = `${process.pid} ${hostname()}`;
  await acquire(claim, mine, path);
  try {
    return await work();
  } finally {
    if (holderOf(claim) === mine) rmSync(claim, { force: true });
  }
}

async function acquire(claim: string, mine: string, path: string): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (create(claim, mine)) return;
    const holder = holderOf(claim);
    // This process retires one worktree at a time (worktree.ts `serially`): a claim naming it is a
    // leftover of an earlier life with the same pid (a restarted container's pid 1).
    if (holder !== null && (holder === mine || !alive(holder))) {
      takeOver(claim, holder);
    } else if (Date.now() - started > WAIT_MS_MAX) {
      throw new ConflictError(
        `the worktree ${path} is still being retired by process ${holder ?? '?'} after 2 minutes`,
        `if no baton process is retiring it, delete ${claim} and try again`,
      );
    } else {
      await new Promise((done) => setTimeout(done, POLL_MS));
    }
  }
}

/** Creates the claim; false if it exists. */
function create(claim: string, mine: string): boolean {
  let fd: number;
  try {
    fd = openSync(claim, 'wx');
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

/** The claim's text, or null when there is none. */
function holderOf(claim: string): string | null {
  try {
    return readFileSync(claim, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Only a process of this host can be known dead; an empty claim is one being written. */
function alive(holder: string): boolean {
  const match = /^(\d+) (.*)$/.exec(holder);
  if (match === null || match[2] !== hostname()) return true;
  try {
    process.kill(Number(match[1]), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Deletes a dead holder's claim. Moved aside first, not deleted outright: another waiter may have
 * taken it over and claimed anew since `stale` was read, and that live claim is put back.
 */
function takeOver(claim: string, stale: string): void {
  const aside = `${claim}.stale-${process.pid}`;
  try {
    renameSync(claim, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (holderOf(aside) !== stale) linkSync(aside, claim);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(aside, { force: true });
  }
}
