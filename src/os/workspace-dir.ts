/**
 * What a workspace's path must be on the machine whose runners work in it: a directory, and for
 * kind `worktree` one inside a git repository, from which each claim's worktree is made (the
 * runner checks the same when a run starts, src/daemon/run-workspace.ts).
 */
import { statSync } from 'node:fs';
import { InvalidInputError } from '../core/errors.js';
import { fileErrorInWords } from '../core/file-errors.js';
import type { WorkspaceKind } from '../core/workspace-plan.js';
import { gitMaybe } from './git.js';

/** InvalidInputError, naming the path and what it is instead, unless it can serve as a workspace of `kind` here. */
export async function checkWorkspaceDir(path: string, kind: WorkspaceKind): Promise<void> {
  const refuse = (what: string, fix: string): never => {
    throw new InvalidInputError(`workspace path ${path} ${what}`, fix);
  };
  const create = 'create the directory first, or give the path of one that exists';
  let isDirectory: boolean;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return refuse('does not exist', create);
    return refuse(`cannot be used: ${fileErrorInWords(error, 'it does not exist')}`, create);
  }
  if (!isDirectory) refuse('is a file, not a directory', 'give the directory runs should work in');
  if (kind !== 'worktree') return;
  if ((await gitMaybe(['rev-parse', '--absolute-git-dir'], { cwd: path })) === null) {
    refuse(
      'is not in a git repository, which a worktree workspace makes its checkouts from',
      'give the path of a git checkout, or register it with --kind dir',
    );
  }
}
