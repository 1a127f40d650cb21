/**
 * What the fleet scenario (fleet-scenario.test.ts) looks at from outside Baton: the agents that
 * run at any moment, read from /proc, and the work its coding agents left in git.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { git } from '../support/git.js';

/** The variables of a process, or null when it is gone or not ours to read. */
function environ(pid: string): Map<string, string> | null {
  let raw: string;
  try {
    raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return null;
  }
  const env = new Map<string, string>();
  for (const pair of raw.split('\0')) {
    const eq = pair.indexOf('=');
    if (eq > 0) env.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return env;
}

/**
 * Samples, every `everyMs`, which claim epochs of each task have a live agent process on this
 * machine (every process carrying `marker=value` and a BATON_KEY: the agent and its children).
 * An overlap is two epochs of one task alive at once: two agents working one task.
 */
export class AgentSampler {
  readonly overlaps: string[] = [];
  /** Each task's epochs seen alive at all. */
  readonly seen = new Map<string, Set<string>>();
  samples = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly marker: string,
    private readonly value: string,
  ) {}

  start(everyMs = 150): void {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  sample(): void {
    this.samples++;
    const alive = new Map<string, Set<string>>();
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const env = environ(pid);
      const key = env?.get('BATON_KEY');
      if (env === null || key === undefined || env.get(this.marker) !== this.value) continue;
      const epoch = env.get('BATON_EPOCH') ?? '?';
      alive.set(key, (alive.get(key) ?? new Set()).add(epoch));
      this.seen.set(key, (this.seen.get(key) ?? new Set()).add(epoch));
    }
    for (const [key, epochs] of alive) {
      if (epochs.size > 1) this.overlaps.push(`${key}: epochs ${[...epochs].join(', ')} alive at once`);
    }
  }
}

/** The worktrees git has registered in `repo`, the main one included. */
export function registeredWorktrees(repo: string): string[] {
  return git(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));
}

/**
 * Every file named `name` in the trees of these refs of `gitDir`, with its text: where a draft
 * may have gone (pushed to origin's branches, or archived in the workspace's repository).
 */
export function filesNamed(gitDir: string, refs: readonly string[], name: RegExp): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const ref of refs) {
    for (const path of git(gitDir, 'ls-tree', '-r', '--name-only', ref).split('\n')) {
      if (!name.test(path)) continue;
      const text = git(gitDir, 'show', `${ref}:${path}`);
      found.set(text, [...(found.get(text) ?? []), `${ref}:${path}`]);
    }
  }
  return found;
}

/** The refs of `gitDir` under `prefix`. */
export function refsUnder(gitDir: string, prefix: string): string[] {
  return git(gitDir, 'for-each-ref', '--format=%(refname)', prefix)
    .split('\n')
    .filter((r) => r !== '');
}
