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
  mkdirSync,
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
  /** The branch's ref, reflog and remote-tracking refs, lent to the agent. */
  readonly branchFiles: readonly string[];
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

/**
 * Every directory at and below `path` (but `keep`) in group `gid`, group-writable, setgid and
 * sticky; files untouched. Sticky: a member of the group may replace or remove only what it owns,
 * so no agent can swap a directory of the runner's for a symbolic link its git would follow.
 */
function lendDirs(path: string, gid: number, keep: string): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (path === keep || stat === undefined || !stat.isDirectory()) return;
  if (stat.gid !== gid) chownSync(path, stat.uid, gid);
  if ((stat.mode & 0o3070) !== 0o3070) chmodSync(path, (stat.mode & 0o7777) | 0o3070);
  // Only directories are lent: a fan-out directory's thousands of objects are not even looked at.
  for (const entry of readdirSync(path, { withFileTypes: true }))
    if (entry.isDirectory()) lendDirs(join(path, entry.name), gid, keep);
}

/**
 * The directories the runner's git writes into, made as the runner's before anything is lent: an
 * agent could otherwise create one first, as a symbolic link, and the runner's git (root) would
 * write its ref, lock or object file wherever it points. Every fan-out directory of `objects`;
 * the branches' `refs/heads/baton`; `refs/baton` (the archive refs), which is never lent.
 */
function makeRunnerDirs(common: string): string {
  const fanOut = Array.from({ length: 256 }, (_, index) => index.toString(16).padStart(2, '0'));
  for (const dir of [...fanOut, 'info', 'pack']) mkdirSync(join(common, 'objects', dir), { recursive: true });
  mkdirSync(join(common, 'refs', 'heads', 'baton'), { recursive: true });
  const archive = join(common, 'refs', 'baton');
  mkdirSync(join(archive, 'archive'), { recursive: true });
  return archive;
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
 * that, complete, before anything is changed: a runner that dies while lending or during the run
 * leaves it for the next one (lent-record.ts).
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
  const branchFiles = [join(common, 'refs', 'heads', branch), join(common, 'logs', 'refs', 'heads', branch)];
  // What the agent's push updates: its branch's remote-tracking refs, if an earlier run left them.
  const remotes = join(common, 'refs', 'remotes');
  if (existsSync(remotes))
    for (const remote of readdirSync(remotes)) branchFiles.push(join(remotes, remote, branch));
  const lent = { path, mode, adminDir, saved, branchFiles, uid, refs: join(common, 'refs') };
  before(lent);
  const archive = makeRunnerDirs(common);
  for (const shared of ['objects', 'refs']) lendDirs(join(common, shared), gid, archive);
  for (const file of branchFiles) if (existsSync(file)) lchownSync(file, uid, gid);
  chownTree(path, uid, gid);
  chownTree(adminDir, uid, gid);
  chmodSync(path, 0o700);
  return lent;
}

/** Gives the worktree back to `uid`:`gid` (the runner) as it was lent; call once the agent's uid has no process. */
export function takeBackWorktree(lent: LentWorktree, uid: number, gid: number): void {
  for (const dir of [lent.path, lent.adminDir]) if (existsSync(dir)) chownTree(dir, uid, gid);
  for (const file of lent.branchFiles) if (existsSync(file)) lchownSync(file, uid, gid);
  reclaim(lent.refs, lent.uid, { uid, gid });
  for (const [file, text] of lent.saved) {
    if (readOrNull(file) === text || !existsSync(dirname(file))) continue;
    rmSync(file, { recursive: true, force: true });
    if (text !== null) writeFileSync(file, text);
  }
  if (existsSync(lent.path)) chmodSync(lent.path, lent.mode);
}
