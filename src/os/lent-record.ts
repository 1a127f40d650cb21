/**
 * What a runner lent to an agent's uid, kept on disk until it is taken back (decision 0025, "A
 * runner that dies"). A runner killed by SIGKILL mid-run leaves the worktree it lent the agent's,
 * with whatever the agent wrote into the files that tell git where the repository is; the runner's
 * git (root) would refuse it as of dubious ownership at best, or follow the agent's pointers.
 *
 * So before lending, the runner writes the record (`.baton/lent/<worktree>.json`, 0600 in a 0700
 * directory: no agent reads or writes it) holding everything the take-back needs, and its own
 * pid and start time. The next `baton up` on the state directory, after taking the host over and
 * before its first sweep, takes back every worktree whose runner is gone: it kills what the uid
 * still runs (unless another live runner's registered range holds the uid now: agent-uid-ranges.ts),
 * restores ownership and the git pointers as the runner would have, removes the agent's HOME and
 * the record. A record whose runner still runs is that runner's to undo.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { killUid } from './agent-uid.js';
import { heldElsewhere } from './agent-uid-ranges.js';
import { isRunning, processIdentity, type ProcessIdentity } from './process-ancestry.js';
import { takeBackWorktree, type LentWorktree } from './worktree-lend.js';

interface Record {
  readonly runner: ProcessIdentity | null;
  readonly home: string;
  readonly lent: Omit<LentWorktree, 'saved'> & { readonly saved: [string, string | null][] };
}

/** Writes the record of `lent` (the agent's HOME at `home`) into `dir`; its path, to drop it later. */
export function recordLend(dir: string, lent: LentWorktree, home: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const record: Record = {
    runner: processIdentity(process.pid),
    home,
    lent: { ...lent, saved: [...lent.saved] },
  };
  const path = join(dir, `${basename(lent.path)}.json`);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(record), { mode: 0o600 });
  renameSync(temporary, path);
  return path;
}

/** Forgets a record once its worktree is taken back. */
export function dropLendRecord(path: string): void {
  rmSync(path, { force: true });
}

function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Not empty (another agent's HOME), or gone already.
  }
}

function readRecord(path: string): Record | null {
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as Record;
    return typeof record.lent?.path === 'string' && Number.isInteger(record.lent.uid) ? record : null;
  } catch {
    return null;
  }
}

/**
 * Takes back every worktree recorded in `dir` whose runner is gone, for `runner` (this process's
 * uid and gid); says what it did, or why it could not (the record then stays for a later try).
 */
export async function takeBackOrphans(
  dir: string,
  runner: { uid: number; gid: number },
  log: (line: string) => void,
): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return; // no runner lent anything here
  }
  for (const name of names) {
    const path = join(dir, name);
    const record = readRecord(path);
    if (record === null) {
      log(`ignoring ${path}: not a record of a lent worktree (remove it if it is stale)`);
      continue;
    }
    if (record.runner === null || isRunning(record.runner)) continue; // its runner's to undo
    const { lent } = record;
    try {
      // Another live runner's agent may hold the uid now (its range registered): never kill that one.
      if (heldElsewhere(lent.uid) === null) await killUid(lent.uid);
      takeBackWorktree({ ...lent, saved: new Map(lent.saved) }, runner.uid, runner.gid);
      rmSync(record.home, { recursive: true, force: true });
    } catch (error) {
      log(
        `worktree ${lent.path} is still lent to uid ${lent.uid} by a runner that is gone: ` +
          `${error instanceof Error ? error.message : String(error)} (run baton up as root to take it back)`,
      );
      continue;
    }
    dropLendRecord(path);
    removeIfEmpty(dirname(record.home)); // the dead runner's directory of HOMEs
    log(`took back worktree ${lent.path} from uid ${lent.uid}, lent by a runner that is gone`);
  }
}
