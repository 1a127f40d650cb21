/**
 * A git worktree per claim, for workspaces of kind `worktree`: coding agents on different tasks
 * never share a checkout. Each task works on its own branch, `baton/<slug of the key>`, which
 * carries over from attempt to attempt; each claim epoch gets its own directory,
 * `<baseDir>/<slug>-epoch-<n>`, so two epochs never share one. Retiring a worktree keeps the
 * branch, archives whatever only the worktree held (see worktree-archive.ts), then removes it.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ConflictError, FencedError, InvalidInputError } from '../core/errors.js';
import { validateEpoch, validateKey } from '../core/validate.js';
import { git, gitDirOf, gitMaybe, gitWrite } from './git.js';
import { archiveWorktree } from './worktree-archive.js';
import { whileClaimed } from './worktree-claim.js';

export { ARCHIVE_PREFIX } from './worktree-archive.js';

const BRANCH_PREFIX = 'baton/';
/** The key a branch was made for, in the repository's config: `branch.<name>.batonKey`. */
const KEY_CONFIG = 'batonKey';
const SLUG_LENGTH_MAX = 80;
const EPOCH_SUFFIX = /-epoch-(\d+)$/;

/** Hex digits of the key's SHA-256 that every slug ends with. */
const HASH_LENGTH = 8;

/**
 * A task key as one valid ref component and directory name: a readable part (lower case, runs of
 * anything but letters, digits, `.`, `_` and `-` become `-`) and a short hash of the key itself.
 * `github:acme/api#1246` → `github-acme-api-1246-<8 hex>`. The hash keeps keys that differ
 * only in case or punctuation (`JIRA-7`, `jira-7`), or that have no Latin letters at all, on
 * branches and directories of their own; ending in hex digits, the slug is never refused by
 * `git check-ref-format` (a key like `con.lock.lock`).
 */
function keySlug(key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, HASH_LENGTH);
  const readable = readableSlug(key);
  return `${readable.length > 0 ? readable : 'task'}-${hash}`;
}

/** The readable part of a slug; may be empty. */
function readableSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/-{2,}/g, '-')
    .slice(0, SLUG_LENGTH_MAX)
    .replace(/^[-.]+|[-.]+$/g, '');
}

/** The branch a task's work goes to: `baton/github-acme-api-1246-<8 hex>`. */
export function branchForKey(key: string): string {
  return `${BRANCH_PREFIX}${keySlug(key)}`;
}

/**
 * The branch earlier versions gave a task, `baton/<readable slug>` without the hash: a task whose
 * work is on it continues from there, when the branch's recorded key is this very key.
 */
function legacyBranchForKey(key: string): string | null {
  const readable = readableSlug(key).replace(/\.lock$/, '');
  return readable.length > 0 ? `${BRANCH_PREFIX}${readable}` : null;
}

/** The directory of one claim's worktree under baseDir. */
function worktreePathFor(baseDir: string, key: string, epoch: number): string {
  return resolve(baseDir, `${keySlug(key)}-epoch-${epoch}`);
}

interface WorktreeEntry {
  readonly path: string;
  readonly head: string | null;
  /** `refs/heads/…`, or null when detached. */
  readonly ref: string | null;
  readonly bare: boolean;
}

/** `git worktree list --porcelain`; the first entry is the main worktree. */
async function listWorktrees(repo: string): Promise<WorktreeEntry[]> {
  const out = await git(['worktree', 'list', '--porcelain'], { cwd: repo });
  return out
    .split(/\n\n+/)
    .filter((block) => block.startsWith('worktree '))
    .map((block) => {
      const field = (name: string): string | null => {
        const line = block
          .split('\n')
          .find((candidate) => candidate === name || candidate.startsWith(`${name} `));
        return line === undefined ? null : line.slice(name.length + 1);
      };
      const head = field('HEAD');
      return {
        path: field('worktree') ?? '',
        head: head === null || /^0+$/.test(head) ? null : head,
        ref: field('branch'),
        bare: field('bare') !== null,
      };
    });
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Gone already: compare by the real path of its parent.
    const parent = dirname(path);
    return parent === path ? path : join(canonical(parent), basename(path));
  }
}

const samePath = (left: string, right: string): boolean => canonical(left) === canonical(right);

async function commonDirOf(repo: string): Promise<string> {
  return canonical(resolve(repo, await git(['rev-parse', '--git-common-dir'], { cwd: repo })));
}

/**
 * Runs one worktree change at a time per repository within this process. Other processes (a
 * second `baton up` on the machine) are not ordered: git's reads of an entry another git is adding
 * or removing are retried instead (git.ts; decision 0044 says why there is no lock across them).
 */
const queues = new Map<string, Promise<unknown>>();
async function serially<T>(repo: string, work: () => Promise<T>): Promise<T> {
  const key = await commonDirOf(repo);
  const previous = queues.get(key) ?? Promise.resolve();
  const next = previous.then(work, work);
  queues.set(
    key,
    next.catch(() => undefined),
  );
  return next;
}

/**
 * Creates the worktree of one claim, on the task's branch (made from the repository's HEAD the
 * first time, reused afterwards). Idempotent for the same (key, epoch). A worktree of an older
 * epoch of the same task that still holds the branch is retired first (its work archived); one of
 * a newer epoch means this claim was fenced off (FencedError).
 */
export async function prepareWorktree(params: {
  repoPath: string;
  key: string;
  epoch: number;
  baseDir: string;
}): Promise<{ path: string; branch: string }> {
  const key = validateKey(params.key);
  const epoch = validateEpoch(params.epoch);
  const repo = resolve(params.repoPath);
  await gitDirOf(repo, 'repository');
  const branch = branchForKey(key);
  const path = worktreePathFor(params.baseDir, key, epoch);
  return serially(repo, async () => {
    const entries = await listWorktrees(repo);
    const here = entries.find((entry) => samePath(entry.path, path));
    if (here !== undefined && existsSync(path)) {
      if (here.ref === `refs/heads/${branch}`) {
        await checkBranchOwner(repo, branch, key);
        return { path, branch };
      }
      throw new ConflictError(
        `${path} is already a worktree, on ${here.ref ?? 'a detached HEAD'} rather than ${branch}`,
        `switch that checkout back to ${branch}, or move it away (git worktree move ${path} <elsewhere>)`,
      );
    }
    if (existsSync(path)) {
      const hint = 'move it away or use another base directory';
      throw new ConflictError(`${path} exists and is not a worktree of ${repo}`, hint);
    }
    const exists = await gitMaybe(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], {
      cwd: repo,
    });
    if (exists !== null) await checkBranchOwner(repo, branch, key);
    await releaseOlderEpochs(repo, entries, branch, path, epoch);
    mkdirSync(resolve(params.baseDir), { recursive: true });
    if (exists !== null) {
      await gitWrite(['worktree', 'add', path, branch], { cwd: repo });
    } else {
      const head = (await legacyTip(repo, key)) ?? (await gitMaybe(headCommit, { cwd: repo }));
      if (head === null) {
        throw new InvalidInputError(
          `the repository ${repo} has no commit yet`,
          'make a first commit, then try again',
        );
      }
      // The branch first, then the worktree: `worktree add -b` makes the branch before it reads the
      // other worktrees, so a read git retries (git.ts) would find the branch made.
      await gitWrite(['branch', '--no-track', branch, head], { cwd: repo });
      await gitWrite(['config', `branch.${branch}.${KEY_CONFIG}`, key], { cwd: repo });
      await gitWrite(['worktree', 'add', path, branch], { cwd: repo });
    }
    return { path, branch };
  });
}

const headCommit = ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'];

/** The tip of the task's branch as earlier versions named it, if that branch was made for this key. */
async function legacyTip(repo: string, key: string): Promise<string | null> {
  const legacy = legacyBranchForKey(key);
  if (legacy === null) return null;
  const owner = await gitMaybe(['config', '--get', `branch.${legacy}.${KEY_CONFIG}`], { cwd: repo });
  if (owner !== key) return null;
  return gitMaybe(['rev-parse', '--verify', '--quiet', `refs/heads/${legacy}^{commit}`], { cwd: repo });
}

/**
 * Two keys with one slug would share a branch: refused, naming the key that has it. A branch that
 * records no task and whose ref file another uid made is refused too: an agent running as its own
 * uid (decision 0025) may make refs beside its branch, one named for a task yet to run among them.
 */
async function checkBranchOwner(repo: string, branch: string, key: string): Promise<void> {
  const owner = await gitMaybe(['config', '--get', `branch.${branch}.${KEY_CONFIG}`], { cwd: repo });
  if (owner !== null && owner !== key) {
    throw new ConflictError(
      `branch ${branch} belongs to task ${owner}, not ${key}`,
      `rename or delete that branch (git branch -m ${branch} <new name>), then run the task again`,
    );
  }
  const ref = join(await commonDirOf(repo), 'refs', 'heads', ...branch.split('/'));
  const maker = owner === null ? lstatSync(ref, { throwIfNoEntry: false })?.uid : undefined;
  const me = process.getuid?.();
  if (maker !== undefined && me !== undefined && maker !== me)
    throw new ConflictError(
      `branch ${branch} records no task and uid ${maker} made it, not this runner (uid ${me})`,
      `delete it if an agent made it (git branch -D ${branch}), then run the task again`,
    );
}

/** The branch may be checked out once only: an older epoch's worktree makes way, anything else refuses. */
async function releaseOlderEpochs(
  repo: string,
  entries: readonly WorktreeEntry[],
  branch: string,
  path: string,
  epoch: number,
): Promise<void> {
  for (const entry of entries) {
    const mine = entry.ref === `refs/heads/${branch}`;
    // A registered worktree whose directory is gone: keep what its HEAD held, then forget it.
    if (!existsSync(entry.path) && (mine || samePath(entry.path, path))) {
      await retire(repo, entry, entry.ref?.replace(/^refs\/heads\//, '') ?? branch);
      continue;
    }
    if (!mine) continue;
    // Worktrees belong to the repository, not to the directory a `baton up` started in: an epoch
    // of this task is one wherever it was made (several `baton up` on one machine, each with its
    // own .baton/worktrees; issue 14, item 3). The branch is the task's alone (checkBranchOwner).
    const match = EPOCH_SUFFIX.exec(basename(entry.path));
    const sameSlug =
      basename(entry.path).replace(EPOCH_SUFFIX, '') === basename(path).replace(EPOCH_SUFFIX, '');
    const other = match === null || !sameSlug ? null : Number(match[1]);
    if (other !== null && other < epoch) {
      await retire(repo, entry, branch);
    } else if (other !== null && other > epoch) {
      throw new FencedError(
        `epoch ${epoch} is no longer current: ${entry.path} belongs to epoch ${other} of the same task`,
        'stop working on this claim; claim the task again if you still need it',
      );
    } else {
      const why = other === epoch ? ', by another run of this same claim' : '';
      throw new ConflictError(
        `branch ${branch} is checked out in ${entry.path}${why}`,
        `commit its work there, switch it to another branch (git -C ${entry.path} switch --detach) ` +
          'or remove it (git worktree remove <path>), then run the task again',
      );
    }
  }
}

/** A linked worktree Baton made for one claim: on a `baton/` branch, in a `-epoch-<n>` directory. */
export interface ClaimWorktree {
  readonly path: string;
  readonly branch: string;
  /** The task key its branch records, or null when the branch records none. */
  readonly key: string | null;
  readonly epoch: number;
}

/** Every worktree of the repository that Baton made for a claim, including ones whose directory is gone. */
export async function listClaimWorktrees(repoPath: string): Promise<ClaimWorktree[]> {
  const repo = resolve(repoPath);
  await gitDirOf(repo, 'repository');
  const out: ClaimWorktree[] = [];
  for (const entry of (await listWorktrees(repo)).slice(1)) {
    const branch = entry.ref?.replace(/^refs\/heads\//, '') ?? '';
    const epoch = EPOCH_SUFFIX.exec(basename(entry.path))?.[1];
    if (!branch.startsWith(BRANCH_PREFIX) || epoch === undefined) continue;
    const key = await gitMaybe(['config', '--get', `branch.${branch}.${KEY_CONFIG}`], { cwd: repo });
    out.push({ path: entry.path, branch, key, epoch: Number(epoch) });
  }
  return out;
}

/**
 * Ends a claim's worktree: archives its unpushed commits and uncommitted changes to
 * `refs/baton/archive/<slug>/<epoch>` (null when nothing was at risk), then removes the
 * directory. The branch is kept. removed is false when no worktree was registered at `path`, or
 * when another process retired it meanwhile.
 */
export async function retireWorktree(params: {
  repoPath: string;
  path: string;
  branch: string;
}): Promise<{ removed: boolean; archivedRef: string | null }> {
  const repo = resolve(params.repoPath);
  await gitDirOf(repo, 'repository');
  if ((await gitMaybe(['check-ref-format', `refs/heads/${params.branch}`], { cwd: repo })) === null) {
    const hint = 'pass the branch the worktree is on (git worktree list)';
    throw new InvalidInputError(`${JSON.stringify(params.branch)} is not a valid branch name`, hint);
  }
  return serially(repo, async () => {
    const entries = await listWorktrees(repo);
    const index = entries.findIndex((listed) => samePath(listed.path, params.path));
    const entry = entries[index];
    if (entry === undefined) {
      if (existsSync(params.path)) {
        throw new ConflictError(
          `${params.path} is not a worktree of ${repo}`,
          'refusing to remove it; check the path',
        );
      }
      return { removed: false, archivedRef: null };
    }
    if (index === 0 || entry.bare) {
      throw new ConflictError(
        `${params.path} is the main checkout of ${repo}`,
        'only linked worktrees are retired',
      );
    }
    return retire(repo, entry, params.branch);
  });
}

/** What retiring one worktree did: removed is false when another process had retired it first. */
interface Retired {
  readonly removed: boolean;
  readonly archivedRef: string | null;
}

const NOT_REMOVED: Retired = { removed: false, archivedRef: null };

/**
 * Retires one worktree. Several `baton up` on one machine may retire the same one at once (one's
 * sweep, another's next claim of the task; issue 14's fleet run): this process's queue does not
 * order theirs, so they take turns by a claim on the worktree (worktree-claim.ts). The holder
 * archives and removes it and says so; a process whose turn comes after finds it no longer
 * registered, and says it was not the one.
 */
async function retire(repo: string, entry: WorktreeEntry, branch: string): Promise<Retired> {
  const registered = async (): Promise<WorktreeEntry | undefined> =>
    (await listWorktrees(repo)).find((listed) => samePath(listed.path, entry.path));
  return whileClaimed(await commonDirOf(repo), entry.path, async () => {
    const current = await registered();
    if (current === undefined) return NOT_REMOVED;
    let archivedRef: string | null;
    try {
      archivedRef = await archive(repo, current, branch);
    } catch (error) {
      // Gone under the snapshot all the same: removed by someone who takes no claim (a person, git
      // worktree prune, a Baton of before the claim), who archived nothing of it for us to name.
      if ((await registered()) === undefined) return NOT_REMOVED;
      throw error;
    }
    // Only now, with everything it held on a ref or its branch.
    const present = existsSync(current.path);
    const removal = present ? ['worktree', 'remove', '--force', current.path] : ['worktree', 'prune'];
    try {
      await gitWrite(removal, { cwd: repo });
    } catch (error) {
      // git unregisters the worktree even when deleting a file of it fails, and then exits non-zero:
      // under the claim no other retirement is at it, so it is this one's, its archive with it.
      if ((await registered()) !== undefined) throw error;
    }
    return { removed: true, archivedRef };
  });
}

/** Archives what the worktree holds (worktree-archive.ts): the ref written, or null. */
async function archive(repo: string, entry: WorktreeEntry, branch: string): Promise<string | null> {
  const present = existsSync(entry.path);
  const gitDir = present ? await gitMaybe(['rev-parse', '--absolute-git-dir'], { cwd: entry.path }) : null;
  const head = present
    ? await gitMaybe(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: entry.path })
    : entry.head;
  const epoch = EPOCH_SUFFIX.exec(basename(entry.path))?.[1];
  return archiveWorktree({
    repo,
    path: entry.path,
    gitDir,
    branch,
    head,
    // A branch of ours is a valid ref already, and its slug names the task uniquely.
    slug: branch.startsWith(BRANCH_PREFIX) ? branch.slice(BRANCH_PREFIX.length) : keySlug(branch),
    label: epoch ?? new Date().toISOString().replace(/[-:]|\.\d+/g, ''),
  });
}
