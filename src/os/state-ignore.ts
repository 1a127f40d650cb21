/**
 * Baton's state directory, `.baton/` in the repository by default, holds the SQLite database, the
 * ledger's private key, job logs and worktrees. None of it belongs in git, and a `git add -A` in
 * the repository would commit the private signing key. So a `.baton` directory Baton writes into
 * gets a `.gitignore` that ignores everything in it, once, when it has none (one written by the
 * user stays as it is). A directory of another name is the user's choice and is left alone.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const IGNORE_ALL =
  "# Baton's state: the database, the ledger's private key, logs, worktrees. Never commit it.\n*\n";

export function keepOutOfGit(dir: string): void {
  if (basename(dir) !== '.baton') return;
  const file = join(dir, '.gitignore');
  if (existsSync(file)) return;
  try {
    writeFileSync(file, IGNORE_ALL, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // Another process wrote it first, or the folder is read-only: nothing of Baton's is written there.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST' && code !== 'EACCES' && code !== 'EROFS' && code !== 'EPERM') throw error;
  }
}
