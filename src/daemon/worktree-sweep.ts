/**
 * Retires the worktrees of claims that are over, whoever made them (issue 14, item 2). A live
 * runner retires its run's worktree when the agent exits, and a later claim of the same task
 * retires an older epoch's; but a runner that died leaves its worktree behind when its job does
 * not run again (cancelled while its host was down, or out of attempts), its uncommitted work
 * in a directory nobody looks at. Every `baton up` therefore sweeps the worktree workspaces
 * present on its machine: when it joins (after a takeover ended its predecessor's sessions),
 * after each recovery pass of its own that rescued someone, and every SWEEP_INTERVAL_MS.
 *
 * A worktree is retired (its unpushed work archived to `refs/baton/archive/`, the directory
 * removed, the branch kept) when the task's live claim is not the one it was made for: no live
 * claim, or one at another epoch. A worktree whose branch records no key is not Baton's to judge
 * and is left alone. The run that owns a live claim is never touched; one whose claim was taken
 * over is being killed as fenced, and retiring its checkout is what the next claim would do.
 */
import { existsSync } from 'node:fs';
import type { Clock } from '../core/time.js';
import type { Store } from '../store/store.js';
import { Nap } from './nap.js';
import { listClaimWorktrees, retireWorktree } from '../os/worktree.js';

/** How often a `baton up` sweeps when nothing else prompts it. */
const SWEEP_INTERVAL_MS = 30_000;

export interface SweptWorktree {
  readonly path: string;
  readonly key: string;
  readonly epoch: number;
  readonly archivedRef: string | null;
}

/** One sweep over every worktree workspace whose repository is on this machine. */
export async function sweepWorktrees(store: Store, log: (line: string) => void): Promise<SweptWorktree[]> {
  const swept: SweptWorktree[] = [];
  for (const workspace of await store.workspaces.list()) {
    if (workspace.kind !== 'worktree' || !existsSync(workspace.path)) continue;
    let worktrees;
    try {
      worktrees = await listClaimWorktrees(workspace.path);
    } catch (error) {
      log(`worktree sweep of workspace ${workspace.name}: ${message(error)}`);
      continue;
    }
    for (const wt of worktrees) {
      if (wt.key === null) continue;
      const claim = await store.claims.current(wt.key);
      if (claim !== null && claim.epoch === wt.epoch) continue;
      try {
        const row = await retireWorktree({ repoPath: workspace.path, path: wt.path, branch: wt.branch });
        if (!row.removed) continue;
        swept.push({ path: wt.path, key: wt.key, epoch: wt.epoch, archivedRef: row.archivedRef });
        const archived =
          row.archivedRef === null ? 'nothing unpushed' : `work archived to ${row.archivedRef}`;
        log(
          `retired worktree ${wt.path} of ${wt.key} epoch ${wt.epoch}, whose claim is over: ` +
            `${archived}, branch ${wt.branch} kept`,
        );
      } catch (error) {
        log(`could not retire worktree ${wt.path} of ${wt.key}: ${message(error)}`);
      }
    }
  }
  return swept;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Sweeps the worktrees of claims that are over (worktree-sweep.ts): at once, so what a dead
 * predecessor left goes before new work starts, then every SWEEP_INTERVAL_MS and when asked.
 */
export function startSweeper(
  store: Store,
  clock: Clock,
  log: (line: string) => void,
  stop: AbortSignal,
): { now: () => void; stop: () => Promise<void> } {
  const end = new AbortController();
  const nap = new Nap();
  const done = (async () => {
    while (!end.signal.aborted && !stop.aborted) {
      await sweepWorktrees(store, log).catch((error: unknown) =>
        log(`worktree sweep failed: ${String(error)}`),
      );
      await nap.sleep(clock, SWEEP_INTERVAL_MS, end.signal);
    }
  })();
  return {
    now: () => nap.wake(),
    stop: async () => {
      end.abort();
      await done;
    },
  };
}
