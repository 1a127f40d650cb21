/**
 * Baton's state is private to the user running it: the state directory (`.baton/`) and what
 * Baton keeps there (the SQLite database, job logs, worktrees) are 0700 directories and 0600
 * files. The database holds every task and command; the logs hold agent output. `baton up`
 * tightens what an earlier version (or a umask) left readable by others, and says so.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { InvalidInputError } from '../core/errors.js';
import { keepOutOfGit } from './state-ignore.js';

const DIR_MODE = 0o700;
/** With agents as other uids (--agent-uids): the state directory and worktrees are searchable, not listable. */
const SEARCH_MODE = 0o711;
const FILE_MODE = 0o600;
/** The directory of worktrees, which agents running as other uids must reach their own worktree through. */
const WORKTREES = 'worktrees';
/** Directories whose files are Baton's own; others (worktrees: git checkouts) keep their files' modes. */
const OWN_FILES = new Set(['logs']);

function mode(path: string): number | null {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return null;
  }
}

/** chmods `path` to `want` when others or the group may use it beyond it; the old mode when it did. */
function tighten(path: string, want: number): number | null {
  const was = mode(path);
  if (was === null || (was & 0o077 & ~want) === 0) return null;
  chmodSync(path, want);
  return was;
}

/** chmods a directory to 0711 (searchable by the agents' uids, listable by no one else). */
function searchable(path: string): void {
  if (!existsSync(path)) mkdirSync(path, { recursive: true, mode: SEARCH_MODE });
  tighten(path, SEARCH_MODE);
  if ((mode(path) ?? 0) !== SEARCH_MODE) chmodSync(path, SEARCH_MODE);
}

const octal = (bits: number): string => `0${bits.toString(8)}`;

/** A path of Baton's state and the mode it should have at most. */
interface Wanted {
  readonly path: string;
  readonly want: number;
  readonly dir: boolean;
}

/**
 * What Baton keeps private, each with the mode it wants: the state directory first, then its
 * files and directories (the files of `logs`), then the SQLite files that live elsewhere.
 */
function privatePaths(options: {
  readonly stateDir: string;
  readonly sqlitePath: string | null;
  readonly agentUids?: boolean;
}): Wanted[] {
  const out: Wanted[] = [
    { path: options.stateDir, want: options.agentUids === true ? SEARCH_MODE : DIR_MODE, dir: true },
  ];
  for (const entry of readdirSync(options.stateDir, { withFileTypes: true })) {
    const path = join(options.stateDir, entry.name);
    if (entry.isFile()) out.push({ path, want: FILE_MODE, dir: false });
    if (!entry.isDirectory()) continue;
    const shared = options.agentUids === true && entry.name === WORKTREES;
    out.push({ path, want: shared ? SEARCH_MODE : DIR_MODE, dir: true });
    if (!OWN_FILES.has(entry.name)) continue;
    for (const inner of readdirSync(path, { withFileTypes: true })) {
      if (inner.isFile()) out.push({ path: join(path, inner.name), want: FILE_MODE, dir: false });
    }
  }
  if (options.sqlitePath !== null && options.sqlitePath !== ':memory:') {
    for (const suffix of ['', '-wal', '-shm', '-journal']) {
      const path = `${options.sqlitePath}${suffix}`;
      if (!path.startsWith(options.stateDir) && existsSync(path))
        out.push({ path, want: FILE_MODE, dir: false });
    }
  }
  return out;
}

/**
 * The paths of Baton's state that others or the group may use beyond what Baton wants, changing
 * nothing (`baton doctor`); empty when the state directory does not exist. A state directory of
 * 0711 is taken as `baton up --agent-uids` left it.
 */
export function looseState(options: {
  readonly stateDir: string;
  readonly sqlitePath: string | null;
}): { path: string; mode: number; want: number }[] {
  if (!existsSync(options.stateDir)) return [];
  const agentUids = mode(options.stateDir) === SEARCH_MODE;
  return privatePaths({ ...options, agentUids }).flatMap(({ path, want }) => {
    const was = mode(path);
    return was === null || (was & 0o077 & ~want) === 0 ? [] : [{ path, mode: was, want }];
  });
}

/**
 * Makes the state directory (creating it if need be) and the SQLite database private; returns
 * one note per thing changed, for the log. With `agentUids`, the state directory and its
 * `worktrees` are 0711 instead: agents running as other uids reach their worktree by its path.
 */
export function makeStatePrivate(options: {
  readonly stateDir: string;
  readonly sqlitePath: string | null;
  readonly agentUids?: boolean;
}): string[] {
  const notes: string[] = [];
  const where = (path: string): string => relative(process.cwd(), path) || path;
  if (!existsSync(options.stateDir)) mkdirSync(options.stateDir, { recursive: true, mode: DIR_MODE });
  keepOutOfGit(options.stateDir);
  const [state, ...rest] = privatePaths(options);
  const was = state === undefined ? null : tighten(state.path, state.want);
  if (was !== null)
    notes.push(
      `${where(options.stateDir)} was ${octal(was)}, now ${octal(mode(options.stateDir) ?? 0)} (private state)`,
    );
  let files = 0;
  let dirs = 0;
  for (const { path, want, dir } of rest) {
    const changed = tighten(path, want) === null ? 0 : 1;
    if (dir) dirs += changed;
    else files += changed;
  }
  if (options.agentUids === true) {
    searchable(options.stateDir);
    searchable(join(options.stateDir, WORKTREES));
  }
  if (dirs > 0)
    notes.push(
      `${dirs} directories under ${where(options.stateDir)} were open to others, now ${octal(DIR_MODE)}`,
    );
  if (files > 0)
    notes.push(`${files} files of Baton's state were readable by others, now ${octal(FILE_MODE)}`);
  return notes;
}

/**
 * `dir` made if need be (0700), and used only when it is a directory (not a symlink) of this
 * process's uid that neither group nor others may write: in a shared temporary directory another
 * user could have made it first, or planted a symlink there. Else InvalidInputError: `what` and
 * the folder, then "remove it (rm -r <dir>)" and `then`.
 */
export function ownPrivateDir(dir: string, what: string, then: string): string {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== (process.getuid?.() ?? 0) || (stat.mode & 0o022) !== 0)
    throw new InvalidInputError(
      `${what} ${dir} is not a directory only this user may write`,
      `remove it (rm -r ${dir})${then}`,
    );
  return dir;
}
