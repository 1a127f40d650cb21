/**
 * Lending a job's git worktree to the agent's uid for its run, and taking it back (decision 0025).
 *
 * Lent: the worktree and its per-worktree git directory (`.git/worktrees/<name>`: index, HEAD,
 * the claim record) become the agent's, the worktree's top 0700 (a sibling agent cannot enter),
 * and the branch's ref and reflog its own. The repository's `objects` and `refs` are made
 * writable by the agents' group, setgid, so its commits can land; that stays. `logs` is not: git
 * appends to a reflog through whatever is at its path, so a symbolic link an agent planted there
 * would have the runner's git (root) append to any file. The agents' git creates no reflogs
 * (`core.logAllRefUpdates = false` in their HOME) and appends only to its own branch's.
 *
 * Taken back, once no process of the uid is left: every file of the worktree and its git
 * directory is the runner's again, and the files that tell git where the repository is (the
 * worktree's `.git`, `gitdir`, `commondir`) and its per-worktree config are what they were when
 * lent, so the runner's git (archive, removal) never reads a location or setting the agent wrote.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  lstatSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { InvalidInputError } from '../core/errors.js';
import { unsearchableOnTheWay } from './agent-uid.js';

/** What lending changed, to be undone. */
export interface LentWorktree {
  readonly path: string;
  readonly mode: number;
  readonly adminDir: string;
  /** Files restored word for word (null: removed, it did not exist). */
  readonly saved: ReadonlyMap<string, string | null>;
  /** The branch's ref and reflog, lent to the agent. */
  readonly branchFiles: readonly string[];
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** lchown every entry below and at `path`, never following a symbolic link. */
function chownTree(path: string, uid: number, gid: number): void {
  lchownSync(path, uid, gid);
  if (!lstatSync(path).isDirectory()) return;
  for (const entry of readdirSync(path)) chownTree(join(path, entry), uid, gid);
}

/** Every directory at and below `path` in group `gid`, group-writable and setgid; files untouched. */
function lendDirs(path: string, gid: number): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isDirectory()) return;
  if (stat.gid !== gid) chownSync(path, stat.uid, gid);
  if ((stat.mode & 0o2070) !== 0o2070) chmodSync(path, (stat.mode & 0o7777) | 0o2070);
  for (const entry of readdirSync(path)) lendDirs(join(path, entry), gid);
}

/** Lends the worktree at `path` (on `branch`) to `uid`:`gid`; returns what to undo. */
export function lendWorktree(path: string, branch: string, uid: number, gid: number): LentWorktree {
  const dotGit = join(path, '.git');
  const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'))?.[1];
  if (pointer === undefined) throw new Error(`${dotGit} names no git directory`);
  const adminDir = resolve(path, pointer);
  const common = resolve(adminDir, (readOrNull(join(adminDir, 'commondir')) ?? '../..').trim());
  const closed = unsearchableOnTheWay(join(common, 'objects'));
  if (closed !== null)
    throw new InvalidInputError(
      `agents cannot reach the repository ${common}: ${closed} is not searchable by other uids`,
      `let others search it (chmod o+x ${closed})`,
    );
  const saved = new Map<string, string | null>();
  for (const file of [dotGit, join(adminDir, 'gitdir'), join(adminDir, 'commondir')])
    saved.set(file, readOrNull(file));
  saved.set(join(adminDir, 'config.worktree'), readOrNull(join(adminDir, 'config.worktree')));
  const mode = lstatSync(path).mode & 0o7777;
  for (const shared of ['objects', 'refs']) lendDirs(join(common, shared), gid);
  const branchFiles = [join(common, 'refs', 'heads', branch), join(common, 'logs', 'refs', 'heads', branch)];
  for (const file of branchFiles) if (existsSync(file)) lchownSync(file, uid, gid);
  chownTree(path, uid, gid);
  chownTree(adminDir, uid, gid);
  chmodSync(path, 0o700);
  return { path, mode, adminDir, saved, branchFiles };
}

/** Gives the worktree back to `uid`:`gid` (the runner) as it was lent; call once the agent's uid has no process. */
export function takeBackWorktree(lent: LentWorktree, uid: number, gid: number): void {
  for (const dir of [lent.path, lent.adminDir]) if (existsSync(dir)) chownTree(dir, uid, gid);
  for (const file of lent.branchFiles) if (existsSync(file)) lchownSync(file, uid, gid);
  for (const [file, text] of lent.saved) {
    if (readOrNull(file) === text || !existsSync(dirname(file))) continue;
    rmSync(file, { recursive: true, force: true });
    if (text !== null) writeFileSync(file, text);
  }
  if (existsSync(lent.path)) chmodSync(lent.path, lent.mode);
}
