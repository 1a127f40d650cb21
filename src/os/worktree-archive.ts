/**
 * What a worktree would lose if it were removed, written to a ref first: commits not on the
 * branch's upstream (or, with no upstream, on no remote-tracking ref), and the uncommitted state
 * of the checkout, tracked and untracked files alike (ignored files are not kept). One ref per
 * retirement, `refs/baton/archive/<slug>/<epoch or time>`, created and never overwritten.
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitMaybe, gitWrite } from './git.js';

export const ARCHIVE_PREFIX = 'refs/baton/archive/';

/** git's empty tree: the state of a checkout whose HEAD has no commit yet. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** Archive commits are Baton's own, whatever identity the machine has (or lacks). */
const IDENTITY = {
  GIT_AUTHOR_NAME: 'Baton',
  GIT_AUTHOR_EMAIL: 'baton@localhost',
  GIT_COMMITTER_NAME: 'Baton',
  GIT_COMMITTER_EMAIL: 'baton@localhost',
};

export interface ArchiveTarget {
  readonly repo: string;
  /** The worktree's directory; it may be gone already, and then only its commits are kept. */
  readonly path: string;
  /** Its per-worktree git directory, where the temporary index goes. */
  readonly gitDir: string | null;
  readonly branch: string;
  /** The commit its HEAD names, if any. */
  readonly head: string | null;
  /** `refs/baton/archive/<slug>/<label>`. */
  readonly slug: string;
  readonly label: string;
}

/** Archives what removing the worktree would lose; returns the ref written, or null if nothing was at risk. */
export async function archiveWorktree(worktree: ArchiveTarget): Promise<string | null> {
  const repo = { cwd: worktree.repo };
  const branchTip = await gitMaybe(
    ['rev-parse', '--verify', '--quiet', `refs/heads/${worktree.branch}^{commit}`],
    repo,
  );
  const tips = unique([worktree.head, branchTip]);
  const atRisk = await dropAncestors(worktree.repo, await withUnpushed(worktree.repo, worktree.branch, tips));
  const headTree =
    worktree.head === null ? EMPTY_TREE : await git(['rev-parse', `${worktree.head}^{tree}`], repo);
  const state =
    worktree.gitDir !== null && existsSync(worktree.path)
      ? await snapshotTree(worktree.path, worktree.gitDir)
      : headTree;
  const dirty = state !== headTree;
  if (!dirty && atRisk.length === 0) return null;
  let target = atRisk[0];
  if (dirty || atRisk.length > 1 || target === undefined) {
    const parents = dirty && worktree.head !== null ? [worktree.head] : [];
    for (const tip of atRisk) if (!parents.includes(tip)) parents.push(tip);
    const first = parents[0];
    const tree = dirty || first === undefined ? state : await git(['rev-parse', `${first}^{tree}`], repo);
    const message = `baton archive of ${worktree.path} (branch ${worktree.branch})\n\n${
      dirty ? 'Uncommitted changes (first parent: HEAD)' : 'Unpushed commits'
    } kept when the worktree was retired.`;
    const args = ['commit-tree', tree, ...parents.flatMap((parent) => ['-p', parent]), '-m', message];
    target = await git(args, { cwd: worktree.repo, env: IDENTITY });
  }
  return createRef(worktree.repo, `${ARCHIVE_PREFIX}${worktree.slug}/${worktree.label}`, target);
}

function unique(values: readonly (string | null)[]): string[] {
  return [...new Set(values.filter((value): value is string => value !== null))];
}

/** The tips with commits that are not on the branch's upstream, or with none, on no remote. */
async function withUnpushed(repo: string, branch: string, tips: readonly string[]): Promise<string[]> {
  const upstream = await gitMaybe(
    ['rev-parse', '--verify', '--quiet', '--symbolic-full-name', `refs/heads/${branch}@{upstream}`],
    { cwd: repo },
  );
  const safe = upstream !== null && upstream !== '' ? [upstream] : ['--remotes'];
  const out: string[] = [];
  for (const tip of tips) {
    const count = await git(['rev-list', '--count', tip, '--not', ...safe], { cwd: repo });
    if (Number(count) > 0) out.push(tip);
  }
  return out;
}

/** Leaves out every tip that another tip already contains. */
async function dropAncestors(repo: string, tips: readonly string[]): Promise<string[]> {
  const kept: string[] = [];
  for (const tip of tips) {
    let contained = false;
    for (const other of tips) {
      if (other === tip) continue;
      const ancestor = await gitMaybe(['merge-base', '--is-ancestor', tip, other], { cwd: repo });
      if (ancestor !== null) contained = true;
    }
    if (!contained) kept.push(tip);
  }
  return kept;
}

/**
 * The tree of the checkout as it stands, untracked files included and ignored ones left out,
 * written through a temporary index so the worktree's own index is untouched.
 */
async function snapshotTree(path: string, gitDir: string): Promise<string> {
  const index = join(gitDir, `baton-archive-index-${process.pid}`);
  const env = { GIT_INDEX_FILE: index };
  try {
    // Starting from the real index keeps force-added files and makes `add -A` cheap.
    if (existsSync(join(gitDir, 'index'))) copyFileSync(join(gitDir, 'index'), index);
    await git(['add', '--all', '--', '.'], { cwd: path, env });
    return await git(['write-tree'], { cwd: path, env });
  } finally {
    rmSync(index, { force: true });
  }
}

/** Creates the ref (never moving an existing one): `<base>`, else `<base>-2`, `<base>-3` … */
async function createRef(repo: string, base: string, commit: string): Promise<string> {
  for (let suffix = 1; ; suffix += 1) {
    const ref = suffix === 1 ? base : `${base}-${suffix}`;
    const existing = await gitMaybe(['rev-parse', '--verify', '--quiet', ref], { cwd: repo });
    if (existing === commit) return ref;
    if (existing !== null) continue;
    // The empty old value makes the update fail if another process created the ref meanwhile.
    const created = await gitWrite(['update-ref', '-m', 'baton archive', ref, commit, ''], { cwd: repo })
      .then(() => true)
      .catch((error: unknown) => {
        if (suffix < 100 && /already exists|cannot lock ref/.test(String(error))) return false;
        throw error;
      });
    if (created) return ref;
  }
}
