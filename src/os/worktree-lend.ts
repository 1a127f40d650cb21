/**
 * Lending a job's git worktree to the agent's uid for its run, and taking it back (decision 0025).
 *
 * Lent: the worktree and its per-worktree git directory (`.git/worktrees/<name>`: index, HEAD,
 * the claim record) become the agent's, the worktree's top 0700 (a sibling agent cannot enter),
 * and the branch's ref and reflog its own. Of the repository, only the directories its commit
 * and push write into are made writable by the agents' group, sticky (worktree-lend-repo.ts):
 * the fan-out directories of `objects` and its branch's directory of refs; `refs/heads`,
 * `refs/tags`, `main` and every other task's branch are not its to move. `logs` is not lent: git
 * appends to a reflog through whatever is at its path, so a symbolic link an agent planted there
 * would have the runner's git (root) append to any file; its own reflogs are made for it.
 *
 * Taken back, once no process of the uid is left: every file of the worktree and its git
 * directory is the runner's again, a ref it made is removed and its objects are the runner's, and
 * the files that tell git where the repository is (the worktree's `.git`, `gitdir`, `commondir`)
 * and its per-worktree config are what they were when lent, so the runner's git (archive,
 * removal) never reads a location or setting the agent wrote.
 */
import {
  chmodSync,
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
import { lendRepository, reclaimRepository, type LentDirs } from './worktree-lend-repo.js';

/** What lending changed, to be undone. */
export interface LentWorktree {
  readonly path: string;
  readonly mode: number;
  readonly adminDir: string;
  /** Files restored word for word (null: removed, it did not exist). */
  readonly saved: ReadonlyMap<string, string | null>;
  /** The repository's directories lent, and the agent's own refs there (worktree-lend-repo.ts). */
  readonly repository: LentDirs;
  /** The agent's uid, and the repository's refs: what it made there is the runner's once it is done. */
  readonly uid: number;
  readonly refs: string;
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

/** Every entry below `path` owned by `from`, given to `to` (what an agent made in refs/ is the runner's after). */
function reclaim(path: string, from: number, to: { uid: number; gid: number }): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return;
  if (stat.uid === from) lchownSync(path, to.uid, stat.isDirectory() ? stat.gid : to.gid);
  if (stat.isDirectory()) for (const entry of readdirSync(path)) reclaim(join(path, entry), from, to);
}

/**
 * Lends the worktree at `path` (on `branch`) to `uid`:`gid`; returns what to undo. `before` gets
 * that, complete, before anything becomes the agent's: a runner that dies while lending or during
 * the run leaves it for the next one (lent-record.ts).
 */
export function lendWorktree(
  path: string,
  branch: string,
  uid: number,
  gid: number,
  before: (lent: LentWorktree) => void = () => undefined,
): LentWorktree {
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
  const repository = lendRepository(common, branch, gid);
  const lent = { path, mode, adminDir, saved, repository, uid, refs: join(common, 'refs') };
  // Recorded before anything becomes the agent's: a runner dying before this line leaves only the
  // repository's directories lent to the group, still the runner's, and the next lend redoes that.
  before(lent);
  for (const file of repository.own) if (existsSync(file)) lchownSync(file, uid, gid);
  chownTree(path, uid, gid);
  chownTree(adminDir, uid, gid);
  chmodSync(path, 0o700);
  return lent;
}

/** Gives the worktree back to `uid`:`gid` (the runner) as it was lent; call once the agent's uid has no process. */
export function takeBackWorktree(lent: LentWorktree, uid: number, gid: number): void {
  for (const dir of [lent.path, lent.adminDir]) if (existsSync(dir)) chownTree(dir, uid, gid);
  for (const file of lent.repository.own) if (existsSync(file)) lchownSync(file, uid, gid);
  reclaimRepository(lent.repository, lent.uid, { uid, gid });
  reclaim(lent.refs, lent.uid, { uid, gid });
  for (const [file, text] of lent.saved) {
    if (readOrNull(file) === text || !existsSync(dirname(file))) continue;
    rmSync(file, { recursive: true, force: true });
    if (text !== null) writeFileSync(file, text);
  }
  if (existsSync(lent.path)) chmodSync(lent.path, lent.mode);
}
