/**
 * Job scopes made of cgroups, v2 or v1. A runner gets a base cgroup per hierarchy below its own
 * cgroup (`baton-<run id>`); each job gets a cgroup below that (`job-<id>-<epoch>`) and a sibling
 * for the git hooks its agent runs (`…-hooks`), so the push guard, a 60 MB Node process, never
 * counts against the agent's budget and cannot be OOM-killed with it. The agent enters its
 * cgroup before its command runs: the runner spawns a one-line shell that writes its own pid
 * into cgroup.procs and then execs the command, so even a process that forks and calls setsid at
 * once is inside. Killing a job kills its cgroups: cgroup.kill on v2, freeze-kill-thaw on v1.
 */
import { join } from 'node:path';
import { rssMb } from './process-tree.js';
import {
  cgroupPids,
  readKeyed,
  readNumber,
  removeCgroup,
  signalAll,
  tryWriteCgroupFile,
  makeCgroup,
  readCgroupFile,
} from './cgroup.js';

const MIB = 1024 * 1024;
/** A ceiling on a job's processes and threads (a fork bomb stops here): well above any agent's. */
const JOB_PIDS_MAX = 4096;
/** What the git hooks of one job may use, apart from the agent's budget. */
const HOOKS_RAM_MB = 512;
const HOOKS_PIDS_MAX = 256;

/** Enters the cgroups named before `--`, then becomes the agent's shell. */
const ENTER = [
  'while [ "$1" != -- ]; do',
  '  echo $$ > "$1" || { echo "baton: cannot enter cgroup $1" >&2; exit 125; }',
  '  shift',
  'done',
  'shift',
  'exec /bin/sh -c "$1"',
].join('\n');

/** One hierarchy a runner uses: `unified` (v2), or a v1 controller's. */
export interface Hierarchy {
  readonly name: 'unified' | 'memory' | 'pids' | 'freezer';
  readonly base: string;
  /** v2 only: the controllers enabled for the jobs below the base. */
  readonly controllers: readonly string[];
}

function hasMemory(hierarchy: Hierarchy): boolean {
  return (
    hierarchy.name === 'memory' || (hierarchy.name === 'unified' && hierarchy.controllers.includes('memory'))
  );
}

function hasPids(hierarchy: Hierarchy): boolean {
  return (
    hierarchy.name === 'pids' || (hierarchy.name === 'unified' && hierarchy.controllers.includes('pids'))
  );
}

/** Writes a limit, or throws naming the file when the host refuses it. */
function must(dir: string, file: string, value: string): void {
  if (!tryWriteCgroupFile(dir, file, value)) throw new Error(`cannot write ${value} to ${join(dir, file)}`);
}

/** Sets the limits of one cgroup in one hierarchy; throws when a required limit cannot be set. */
function limit(
  hierarchy: Hierarchy,
  dir: string,
  ramMb: number | null,
  pidsMax: number,
  oomGroup: boolean,
): void {
  if (hasPids(hierarchy)) must(dir, 'pids.max', String(pidsMax));
  limitMemory(hierarchy, dir, ramMb, oomGroup);
}

/** Sets one cgroup's memory budget, where the hierarchy has the controller and a budget is asked. */
function limitMemory(hierarchy: Hierarchy, dir: string, ramMb: number | null, oomGroup: boolean): void {
  if (!hasMemory(hierarchy) || ramMb === null || ramMb <= 0) return;
  const bytes = String(ramMb * MIB);
  if (hierarchy.name === 'unified') {
    must(dir, 'memory.max', bytes);
    tryWriteCgroupFile(dir, 'memory.swap.max', '0'); // a budget that swaps is no budget
    if (oomGroup) tryWriteCgroupFile(dir, 'memory.oom.group', '1'); // the job dies as one
  } else {
    must(dir, 'memory.limit_in_bytes', bytes);
    tryWriteCgroupFile(dir, 'memory.memsw.limit_in_bytes', bytes);
  }
}

/** The cgroups of one job (one per hierarchy) and those of its hooks. */
export class CgroupJob {
  private readonly dirs: readonly string[];
  private readonly hookDirs: readonly string[];

  constructor(
    private readonly hierarchies: readonly Hierarchy[],
    name: string,
    private readonly ramMb: number | null,
    /** The run's marker (BATON_RUN), set in the agent's environment. */
    readonly marker: string,
  ) {
    this.dirs = hierarchies.map((hierarchy) => join(hierarchy.base, name));
    this.hookDirs = hierarchies.map((hierarchy) => join(hierarchy.base, `${name}-hooks`));
  }

  /** Makes the cgroups and sets their limits; throws (naming the file) when the host refuses. */
  create(): void {
    this.hierarchies.forEach((hierarchy, index) => {
      for (const [dir, ram, pids, group] of [
        [this.dirs[index] ?? '', this.ramMb, JOB_PIDS_MAX, true],
        [this.hookDirs[index] ?? '', HOOKS_RAM_MB, HOOKS_PIDS_MAX, false],
      ] as const) {
        if (!makeCgroup(dir)) throw new Error(`cannot make cgroup ${dir}`);
        limit(hierarchy, dir, ram, pids, group);
      }
    });
  }

  /**
   * Gives cgroups made earlier without a budget (a warm slot's, warm-slot.ts) this job's: its
   * memory limit; the pids caps and the hooks' limits were set when they were made. Throws
   * (naming the file) when the host refuses.
   */
  adopt(): void {
    this.hierarchies.forEach((hierarchy, index) =>
      limitMemory(hierarchy, this.dirs[index] ?? '', this.ramMb, true),
    );
  }

  /** The files the agent's process writes `0` to, to enter its cgroups (the launcher's way). */
  enterFiles(): string[] {
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /** `sh -c ENTER baton-agent <procs…> -- <command>`: the agent enters its cgroups, then runs. */
  spawnArgs(command: string): { file: string; args: string[] } {
    const procs = this.dirs.map((dir) => join(dir, 'cgroup.procs'));
    return { file: '/bin/sh', args: ['-c', ENTER, 'baton-agent', ...procs, '--', command] };
  }

  /**
   * What the agent is told: BATON_HOOK_CGROUPS, the cgroup.procs files of the job's hook cgroups,
   * which the hooks Baton installs move themselves into (none when a path holds a space).
   */
  env(): Record<string, string> {
    const files = this.hookDirs.map((dir) => join(dir, 'cgroup.procs'));
    return { BATON_HOOK_CGROUPS: files.some((file) => /\s/.test(file)) ? '' : files.join(' ') };
  }

  /** Nothing to learn from the spawned pid: membership is the cgroup's. */
  started(_pid: number): void {}

  /** Not pinged: the runner's reaper keeps the watchdog of every job cgroup (reaper.ts). */
  readonly pinged = false;

  /** Whether oomKills() counts the kernel's OOM kills in this job (a memory controller). */
  get countsOom(): boolean {
    return this.hierarchies.some(hasMemory);
  }

  get enforcesMemory(): boolean {
    return this.ramMb !== null && this.ramMb > 0 && this.hierarchies.some(hasMemory);
  }

  members(): number[] {
    return [...new Set(this.dirs.flatMap((dir) => cgroupPids(dir)))];
  }

  /** The job's memory in MB: the cgroup's own count where it has one, else its members' RSS. */
  memoryMb(): number {
    const index = this.hierarchies.findIndex(hasMemory);
    const dir = this.dirs[index];
    const hierarchy = this.hierarchies[index];
    if (dir === undefined || hierarchy === undefined) return rssMb(this.members());
    const bytes = readNumber(dir, hierarchy.name === 'unified' ? 'memory.current' : 'memory.usage_in_bytes');
    return bytes === null ? rssMb(this.members()) : bytes / MIB;
  }

  /** The most memory the job used, in MB, where the cgroup records it. */
  peakMb(): number | null {
    const index = this.hierarchies.findIndex(hasMemory);
    const dir = this.dirs[index];
    const hierarchy = this.hierarchies[index];
    if (dir === undefined || hierarchy === undefined) return null;
    const bytes = readNumber(dir, hierarchy.name === 'unified' ? 'memory.peak' : 'memory.max_usage_in_bytes');
    return bytes === null ? null : bytes / MIB;
  }

  /** How many processes of the job the kernel's OOM killer has killed. */
  oomKills(): number {
    const index = this.hierarchies.findIndex(hasMemory);
    const dir = this.dirs[index];
    const hierarchy = this.hierarchies[index];
    if (dir === undefined || hierarchy === undefined) return 0;
    return hierarchy.name === 'unified'
      ? readKeyed(dir, 'memory.events', 'oom_kill')
      : readKeyed(dir, 'memory.oom_control', 'oom_kill');
  }

  /** Kills everything in the job's cgroups and its hooks'; returns at once. */
  kill(): void {
    killCgroups([...this.dirs, ...this.hookDirs]);
  }

  /** Kills what is left, waits (bounded) for the cgroups to empty, and removes them. */
  async close(): Promise<void> {
    await emptyAndRemove([...this.dirs, ...this.hookDirs]);
  }
}

/** Kills every process in these cgroups: cgroup.kill where the kernel has it, else freeze, kill, thaw. */
function killCgroups(dirs: readonly string[]): number {
  const rest = dirs.filter((dir) => !tryWriteCgroupFile(dir, 'cgroup.kill', '1'));
  const frozen = rest.filter(
    (dir) =>
      readCgroupFile(dir, 'freezer.state') !== null && tryWriteCgroupFile(dir, 'freezer.state', 'FROZEN'),
  );
  const signalled = signalAll(rest);
  for (const dir of frozen) tryWriteCgroupFile(dir, 'freezer.state', 'THAWED');
  return signalled;
}

/** Kills until the cgroups are empty (about 2 s at most), then removes them; true when all went. */
export async function emptyAndRemove(dirs: readonly string[]): Promise<boolean> {
  for (let round = 0; round < 100 && dirs.some((dir) => cgroupPids(dir).length > 0); round++) {
    killCgroups(dirs);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return dirs.map((dir) => removeCgroup(dir)).every(Boolean);
}
