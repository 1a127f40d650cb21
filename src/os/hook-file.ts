/**
 * Writes a git hook that other processes may be running at that very moment. A repository's hooks
 * are shared by all its worktrees, and Baton installs them again for each claim's worktree while
 * agents in the others commit and push: writing the file in place leaves it open for writing
 * while git execs it, and the exec fails with ETXTBSY ("cannot exec …/pre-push: Text file busy"),
 * failing that agent's push (found by issue 14's fleet scenario). So an unchanged hook is left
 * alone, and a changed one is written beside it and renamed over it: a running hook keeps the old
 * file, the next exec gets the new one, and no one ever execs a file open for writing.
 */
import { chmodSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';

/** Writes `text` to the executable file `path` unless it holds it already; true when written. */
export function writeHookFile(path: string, text: string): boolean {
  try {
    if (readFileSync(path, 'utf8') === text && (statSync(path).mode & 0o777) === 0o755) return false;
  } catch {
    // Absent or unreadable: written below.
  }
  const temp = `${path}.baton-${process.pid}-${Date.now()}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o755 });
    chmodSync(temp, 0o755);
    renameSync(temp, path);
  } finally {
    rmSync(temp, { force: true });
  }
  return true;
}
