/**
 * The repository's side of lending a worktree (worktree-lend.ts, decision 0025): which of its
 * shared directories an agent's uid may write into, and nothing else.
 *
 * Lent (group A, group-writable, setgid, sticky): the 256 fan-out directories of `objects` (its
 * commits' loose objects) and the one directory of refs its branch is in, `refs/heads/baton`, with
 * the same directory under each remote's `refs/remotes/<remote>` (what its push updates). Not lent:
 * `refs`, `refs/heads`, `refs/tags`, `objects`, `objects/pack`, `objects/info`, and every other
 * directory, whatever an earlier version of Baton lent. Sticky, a lent directory lets an agent
 * replace or remove only files it owns; a ref that existed only in `packed-refs` could still be
 * shadowed there by a new loose file, so every packed ref below a lent directory is first written
 * out as a loose file of the runner's, with the value it has.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { heldElsewhere } from './agent-uid-ranges.js';

/** The directories an agent may write into, and its own files there (to lend and take back). */
export interface LentDirs {
  /** The fan-out directories of `objects`. */
  readonly objects: readonly string[];
  /** Its branch's directory of refs, under `refs/heads` and under each remote's. */
  readonly refs: readonly string[];
  /** Its branch's ref and reflog, and each remote-tracking ref of it with its reflog. */
  readonly own: readonly string[];
}

const FAN_OUT = Array.from({ length: 256 }, (_, index) => index.toString(16).padStart(2, '0'));

/**
 * `rel` (slash-separated) below `common` as a directory, each missing part made by the runner
 * (0755), none of them a symbolic link: an agent could have left one there (earlier versions lent
 * whole trees), and the runner's git would follow it.
 */
function runnerDir(common: string, rel: string): string {
  let dir = common;
  for (const part of rel.split('/')) {
    dir = join(dir, part);
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (stat === undefined) mkdirSync(dir, { mode: 0o755 });
    else if (!stat.isDirectory())
      throw new InvalidInputError(
        `${dir} is not a directory (a symbolic link or a file): it is not lent`,
        `look at what made it, and remove it (rm ${dir})`,
      );
  }
  return dir;
}

/** The repository's remotes: those its config names, and those it has remote-tracking refs of. */
function remotesOf(common: string): string[] {
  const names = new Set<string>();
  const config = readFileSync(join(common, 'config'), 'utf8');
  for (const match of config.matchAll(/^\s*\[\s*remote\s+"((?:[^"\\\n]|\\.)*)"\s*\]/gim))
    names.add((match[1] ?? '').replace(/\\(.)/g, '$1'));
  const remotes = join(common, 'refs', 'remotes');
  if (existsSync(remotes)) for (const name of readdirSync(remotes)) names.add(name);
  // A name git would refuse as part of a ref is no remote of a ref Baton lends.
  return [...names].filter((name) => name !== '' && !name.split('/').some((part) => /^\.|^$/.test(part)));
}

/** Every ref `packed-refs` holds, with its value. */
function packedRefs(common: string): Map<string, string> {
  const refs = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(join(common, 'packed-refs'), 'utf8');
  } catch {
    return refs;
  }
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{40,64}) (refs\/\S+)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) refs.set(match[2], match[1]);
  }
  return refs;
}

/**
 * Every ref that only `packed-refs` holds below one of `dirs`, written out as a loose file of the
 * runner's with the same value (to git, the same ref), so no agent can shadow it with one of its own.
 */
function loosenPackedRefs(common: string, dirs: readonly string[]): void {
  for (const [ref, value] of packedRefs(common)) {
    const path = join(common, ref);
    if (!dirs.some((dir) => path.startsWith(`${dir}${sep}`)) || existsSync(path)) continue;
    runnerDir(common, dirname(ref));
    try {
      writeFileSync(path, `${value}\n`, { flag: 'wx', mode: 0o644 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/**
 * Every directory at and below `path` but the lent ones (not entered) that group `gid` may write
 * into: no longer group-writable. What an earlier version lent, or the runner made meanwhile.
 */
function closeDirs(path: string, gid: number, lent: ReadonlySet<string>): void {
  if (lent.has(path)) return;
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isDirectory()) return;
  if (stat.gid === gid && (stat.mode & 0o020) !== 0) chmodSync(path, stat.mode & 0o7757);
  for (const entry of readdirSync(path, { withFileTypes: true }))
    if (entry.isDirectory()) closeDirs(join(path, entry.name), gid, lent);
}

/** One directory (not what is below it) in group `gid`, group-writable, setgid and sticky. */
function lendDir(path: string, gid: number): void {
  const stat = lstatSync(path);
  if (stat.gid !== gid) chownSync(path, stat.uid, gid);
  if ((stat.mode & 0o3070) !== 0o3070) chmodSync(path, (stat.mode & 0o7777) | 0o3070);
}

/**
 * Refuses to lend what another live runner's agents write into now: lending gives a directory to
 * this runner's group, which would take it from theirs mid-run. A directory still lent to the
 * group of a runner that stopped is this runner's to take.
 */
function notLentElsewhere(common: string, dirs: ReadonlySet<string>, gid: number): void {
  const groups = new Set<number>();
  for (const dir of dirs) {
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (stat !== undefined && stat.gid !== gid && (stat.mode & 0o020) !== 0) groups.add(stat.gid);
  }
  for (const group of groups) {
    const other = heldElsewhere(group);
    if (other !== null)
      throw new ConflictError(
        `the repository ${common} is lent to group ${group}, the agents of the baton up running as pid ` +
          `${other.pid} (--agent-uids ${other.first}-${other.last}): two runners' agents cannot share it at once`,
        "run the workspace's jobs from one baton up --agent-uids, or give each runner its own clone",
      );
  }
}

/**
 * Makes the repository at `common` writable by group `gid` where the agent's git must write to
 * commit on `branch` and push it, and nowhere else; its own refs' files exist (a reflog made
 * empty when missing, so its git can append to it: `logs` is never lent).
 */
export function lendRepository(common: string, branch: string, gid: number): LentDirs {
  const dir = dirname(branch);
  if (dir === '.' || dir.startsWith('.'))
    throw new InvalidInputError(`branch ${branch} is not below a directory of refs/heads: not lent`);
  for (const made of [...FAN_OUT, 'info', 'pack']) runnerDir(common, `objects/${made}`);
  runnerDir(common, 'refs/baton/archive');
  const owned = [`refs/heads/${branch}`];
  const refs = [runnerDir(common, `refs/heads/${dir}`)];
  for (const remote of remotesOf(common)) {
    refs.push(runnerDir(common, `refs/remotes/${remote}/${dir}`));
    owned.push(`refs/remotes/${remote}/${branch}`);
  }
  const own: string[] = [];
  for (const ref of owned) {
    own.push(join(common, ref));
    const log = join(runnerDir(common, dirname(`logs/${ref}`)), basename(ref));
    if (!existsSync(log)) closeSync(openSync(log, 'a', 0o644));
    own.push(log);
  }
  const objects = FAN_OUT.map((name) => join(common, 'objects', name));
  const lent = new Set([...objects, ...refs]);
  notLentElsewhere(common, lent, gid);
  for (const shared of ['objects', 'refs']) closeDirs(join(common, shared), gid, lent);
  loosenPackedRefs(common, refs);
  for (const path of lent) lendDir(path, gid);
  return { objects, refs, own };
}

/**
 * What uid `uid` left in the lent directories, once it has no process: a ref or lock file it made
 * (not one of `own`) is removed, so nothing it named outlives its run; its objects become the
 * runner's (`to`), so a later run of the same uid, for another task, cannot remove them.
 */
export function reclaimRepository(lent: LentDirs, uid: number, to: { uid: number; gid: number }): void {
  const own = new Set(lent.own);
  for (const dir of lent.refs)
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      const path = join(dir, name);
      if (own.has(path) || lstatSync(path, { throwIfNoEntry: false })?.uid !== uid) continue;
      rmSync(path, { recursive: true, force: true }); // a link it made goes, never what it names
    }
  for (const dir of lent.objects)
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      const path = join(dir, name);
      if (lstatSync(path, { throwIfNoEntry: false })?.uid === uid) lchownSync(path, to.uid, to.gid);
    }
}
