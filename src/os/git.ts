/**
 * Runs `git` as a child process (execFile, never a shell) for the worktree lifecycle and the
 * push guard. Variables that would point git at another repository (GIT_DIR and friends, which git
 * sets for the hooks it runs) are dropped, so every call is about the directory it names.
 */
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { GIT_MINIMUM } from '../core/doctor.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';

/** Set by git for hooks; inherited, they would override `cwd`. */
const LOCATION_VARIABLES = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_PREFIX',
  'GIT_NAMESPACE',
];

const OUTPUT_BYTES_MAX = 64 * 1024 * 1024;

export interface GitOptions {
  readonly cwd: string;
  /** Extra variables for this call only, such as GIT_INDEX_FILE. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Run as this uid and gid with this HOME: the runner's look into a worktree lent to an agent's
   * uid (--agent-uids) reads config that agent could write, so it runs with the agent's rights.
   */
  readonly as?: { readonly uid: number; readonly gid: number; readonly home: string } | undefined;
}

/** A git command that failed: what ran, in which directory, and git's own words. */
class GitCommandError extends ConflictError {
  constructor(
    readonly args: readonly string[],
    readonly cwd: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    hint?: string,
  ) {
    super(`git ${args.join(' ')} failed in ${cwd}: ${firstLine(stderr) || `exit ${exitCode}`}`, hint);
  }
}

/** git's own verdict (its `fatal:` or `error:` line), else its first line that is not a hint. */
function firstLine(text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith('hint:'));
  return lines.find((line) => /^(fatal|error):/.test(line)) ?? lines[0] ?? '';
}

/** git's own verdict on a failed command (its `fatal:` line), or the error's message. */
export function gitFailureLine(error: unknown): string {
  if (!(error instanceof GitCommandError)) return error instanceof Error ? error.message : String(error);
  return firstLine(error.stderr) || `exit ${error.exitCode}`;
}

/** A git command that ran and failed: this host's trouble with its checkout, not the job's. */
export function isGitFailure(error: unknown): boolean {
  return error instanceof GitCommandError;
}

function gitEnv(extra: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of LOCATION_VARIABLES) if (extra?.[name] === undefined) delete env[name];
  // Never wait for a password or an editor.
  env['GIT_TERMINAL_PROMPT'] = '0';
  env['GIT_EDITOR'] = 'true';
  return env;
}

/**
 * git read a linked worktree's files while another process changed them. A removal: git lists
 * `.git/worktrees/<id>` and resolves paths beneath it in separate steps, and dies in the second
 * when the entry is gone ("Invalid path '…/.git/worktrees/<id>': No such file or directory", from
 * the fleet scenario). An addition: `git worktree add` creates the entry's commondir empty and then
 * writes it, and a git reading it in between dies ("failed to read …/worktrees/<id>/commondir",
 * CI54; decision 0044), whether it is Baton's, an agent's or a person's. Every command that looks
 * at the worktrees (list, add, remove, branch) does so before it changes anything, so the same
 * command again sees the list as it now is.
 */
const WORKTREE_GONE = /Invalid path '[^']*\/worktrees\/[^']*': No such file or directory/;
const WORKTREE_HALF_MADE = /failed to read .*\/worktrees\/[^/\s]+\/commondir/;
const WORKTREE_IN_FLUX = new RegExp(`${WORKTREE_GONE.source}|${WORKTREE_HALF_MADE.source}`);
const IN_FLUX_TRIES = 6;

/** Runs git and returns its stdout without the trailing newline; GitCommandError on failure. */
export function git(args: readonly string[], options: GitOptions): Promise<string> {
  return retried(WORKTREE_IN_FLUX, IN_FLUX_TRIES, () => gitOnce(args, options));
}

/** Runs `call` again, with backoff (50, 100, 200 … ms), while git fails with stderr matching `transient`. */
async function retried(transient: RegExp, tries: number, call: () => Promise<string>): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const again = error instanceof GitCommandError && transient.test(error.stderr);
      if (!again || attempt >= tries) throw error;
      await new Promise((done) => setTimeout(done, 25 * 2 ** attempt));
    }
  }
}

/** git's user config in `home` (a GIT_CONFIG_GLOBAL of the runner's would name a file only it reads). */
const homeOf = (home: string): Record<string, string> => ({
  HOME: home,
  GIT_CONFIG_GLOBAL: join(home, '.gitconfig'),
});

function gitOnce(args: readonly string[], options: GitOptions): Promise<string> {
  const as = options.as;
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...args],
      {
        cwd: options.cwd,
        env: gitEnv(as === undefined ? options.env : { ...options.env, ...homeOf(as.home) }),
        maxBuffer: OUTPUT_BYTES_MAX,
        encoding: 'utf8',
        ...(as === undefined ? {} : { uid: as.uid, gid: as.gid }),
      },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve(stdout.replace(/\n$/, ''));
          return;
        }
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          // Node says ENOENT for a missing cwd too: that is the directory's fault, not git's.
          reject(
            isDirectory(options.cwd)
              ? new InvalidInputError(
                  'git is not installed or not on PATH',
                  `install git ${GIT_MINIMUM} or later`,
                )
              : new InvalidInputError(
                  `the directory ${options.cwd} does not exist`,
                  'give the path of a git checkout',
                ),
          );
          return;
        }
        const exitCode = typeof error.code === 'number' ? error.code : null;
        reject(new GitCommandError(args, options.cwd, exitCode, stderr));
      },
    );
  });
}

// Another git process (a second `baton up` on this host) holds a lock file: worth another try.
const LOCKED = /Unable to create '[^']*\.lock'|could not lock config file|index\.lock/;
const LOCK_TRIES = 6;

/** git() for commands that write, retried with backoff while another process holds a lock file. */
export function gitWrite(args: readonly string[], options: GitOptions): Promise<string> {
  return retried(LOCKED, LOCK_TRIES, () => git(args, options));
}

/** Like git(), but null instead of an error when git exits non-zero (a ref that does not exist). */
export async function gitMaybe(args: readonly string[], options: GitOptions): Promise<string | null> {
  try {
    return await git(args, options);
  } catch (error) {
    if (error instanceof GitCommandError) return null;
    throw error;
  }
}

/**
 * The absolute per-worktree git directory of `dir` (`.git` of a main checkout, or
 * `.git/worktrees/<name>` of a linked one); InvalidInputError when `dir` is not in a git repository.
 */
export async function gitDirOf(dir: string, what = 'directory'): Promise<string> {
  if (!isDirectory(dir)) {
    throw new InvalidInputError(`the ${what} ${dir} does not exist`, 'give the path of a git checkout');
  }
  const gitDir = await gitMaybe(['rev-parse', '--absolute-git-dir'], { cwd: dir });
  if (gitDir === null) {
    throw new InvalidInputError(
      `the ${what} ${dir} is not a git repository`,
      'point it at a git checkout, or create one with `git init` and a first commit',
    );
  }
  return gitDir;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * InvalidInputError when git has no committer identity in `dir` (no user.email and none it can
 * guess: root or cron with an empty HOME), which `git notes` and `git commit` need; asked before
 * anything is written.
 */
export async function requireCommitter(dir: string): Promise<void> {
  try {
    await git(['var', 'GIT_COMMITTER_IDENT'], { cwd: dir });
  } catch (error) {
    if (!(error instanceof GitCommandError)) throw error;
    throw new InvalidInputError(
      `git has no committer identity in ${dir} (${gitFailureLine(error)})`,
      `set one in that repository (git -C ${dir} config user.email you@example.com, and user.name), ` +
        'or set GIT_COMMITTER_EMAIL and GIT_COMMITTER_NAME for the command',
    );
  }
}

/** `git --version`'s answer (`git version 2.39.5`), or null when git is not on PATH. */
export async function gitVersionAnswer(): Promise<string | null> {
  try {
    return await git(['--version'], { cwd: process.cwd() });
  } catch (error) {
    if (error instanceof InvalidInputError) return null;
    throw error;
  }
}
