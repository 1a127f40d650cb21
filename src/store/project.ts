/**
 * Finds the project a command runs in, as git finds its repository: from the working directory
 * upward, the nearest directory holding `.baton/baton.db` is the project, whose `.baton/` holds
 * the database and everything else Baton keeps (logs, worktrees, keys). Like git, the search
 * stops at a filesystem boundary and never enters a directory named in BATON_CEILING_DIRECTORIES
 * (colon-separated absolute paths, git's GIT_CEILING_DIRECTORIES); the working directory itself
 * is always looked at. `--db` and BATON_DB are not this module's business: they win before it.
 */
import { statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { DEFAULT_DB } from './open.js';

/** The nearest directory from `cwd` upward with a `.baton/baton.db` file, or null when none. */
function findProject(cwd: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const ceilings = new Set(
    (env['BATON_CEILING_DIRECTORIES'] ?? '')
      .split(':')
      .filter((dir) => dir !== '' && isAbsolute(dir))
      .map((dir) => resolve(dir)),
  );
  let dir = resolve(cwd);
  const device = deviceOf(dir);
  for (;;) {
    if (isFile(join(dir, DEFAULT_DB))) return dir;
    const parent = dirname(dir);
    if (parent === dir || ceilings.has(parent) || deviceOf(parent) !== device) return null;
    dir = parent;
  }
}

/**
 * The database when none is named: the project's, as a path that works from `cwd`; the relative
 * `.baton/baton.db` (created here by `baton init` or `baton up`) when the project is `cwd` or none
 * is found above it.
 */
export function projectDb(cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const project = findProject(cwd, env);
  return project === null || project === resolve(cwd) ? DEFAULT_DB : join(project, DEFAULT_DB);
}

/** The `.baton/` directory of the project `cwd` is in, else of `cwd` itself. */
export function projectStateDir(cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(findProject(cwd, env) ?? resolve(cwd), '.baton');
}

function deviceOf(dir: string): number | null {
  try {
    return statSync(dir).dev;
  } catch {
    return null;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
