/**
 * What changed in a git worktree between two looks: files whose status, size or modification
 * time moved (so a second edit of an already modified file counts), and commits made on HEAD.
 * The runner turns these into progress marks; a directory that is not a git checkout has none.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { gitMaybe, type GitOptions } from './git.js';

export interface WorktreeSample {
  readonly head: string | null;
  /** Each changed or untracked path, with its status, size and modification time. */
  readonly entries: ReadonlyMap<string, string>;
}

/** The worktree's state now, or null when `dir` is not inside a git work tree (`as`: git as that uid). */
export async function sampleWorktree(dir: string, as?: GitOptions['as']): Promise<WorktreeSample | null> {
  // A look, never a write: plain `git status` refreshes the index under index.lock when it can,
  // and the agent's own `git add` or `git commit` at that moment dies with "index.lock: File exists".
  const status = await gitMaybe(
    ['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--untracked-files=all'],
    { cwd: dir, as },
  );
  if (status === null) return null;
  const head = await gitMaybe(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: dir, as });
  const entries = new Map<string, string>();
  const fields = status.split('\0');
  for (let index = 0; index < fields.length; index++) {
    const field = fields[index] ?? '';
    if (field.length < 4) continue;
    const code = field.slice(0, 2);
    const path = field.slice(3);
    // A rename or copy is followed by its source path, in a field of its own.
    if (code.includes('R') || code.includes('C')) index++;
    entries.set(path, `${code}:${signature(join(dir, path))}`);
  }
  return { head, entries };
}

function signature(path: string): string {
  try {
    const stats = statSync(path);
    return `${stats.size}:${stats.mtimeMs}`;
  } catch {
    return 'gone';
  }
}

/** Files that changed and commits made from `before` to `after`. */
export async function worktreeChanges(
  dir: string,
  before: WorktreeSample,
  after: WorktreeSample,
  as?: GitOptions['as'],
): Promise<{ readonly filesChanged: number; readonly commits: number }> {
  let filesChanged = 0;
  for (const [path, sig] of after.entries) if (before.entries.get(path) !== sig) filesChanged++;
  for (const path of before.entries.keys()) if (!after.entries.has(path)) filesChanged++;
  let commits = 0;
  if (after.head !== null && after.head !== before.head) {
    const range = before.head === null ? [after.head] : [`${before.head}..${after.head}`];
    const count = await gitMaybe(['rev-list', '--count', ...range], { cwd: dir, as });
    commits = Math.max(1, Number(count ?? '1') || 1);
  }
  return { filesChanged, commits };
}
