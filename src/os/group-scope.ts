/**
 * The job scope where no cgroup can be had: the agent runs under the Node shim (agent-shim.ts,
 * its own process group, dying with its runner), and the job's processes are the group, every
 * descendant of the shim, and every process whose environment carries the run's marker
 * (BATON_RUN), which finds the ones that called setsid and were orphaned. Best effort: a process
 * that clears its environment and leaves the tree is not found; the cgroup kinds have no such gap.
 */
import type { Writable } from 'node:stream';
import { killAll, killTree, pidsWithEnv, rssMb, treeMembers } from './process-tree.js';
import type { Pinger } from './watchdog.js';

export const RUN_MARKER = 'BATON_RUN';

export class GroupJob {
  private root: number | null = null;
  private pings: Writable | null = null;

  constructor(
    private readonly shimPath: string,
    /** The marker's value: `<run id>:<job>.<epoch>`. */
    readonly marker: string,
    /** The runner's pings (watchdog.ts), or null: then the shim has no deadline. */
    private readonly pinger: Pinger | null = null,
  ) {}

  /** Whether the shim's stdin is a pipe the runner pings it on. */
  get pinged(): boolean {
    return this.pinger !== null;
  }

  /** None: the shim must be the runner's own child to watch it, so this kind is spawned. */
  enterFiles(): null {
    return null;
  }

  spawnArgs(command: string): { file: string; args: string[] } {
    const deadline = String(this.pinger?.options.deadlineMs ?? 0);
    return { file: process.execPath, args: [this.shimPath, String(process.pid), deadline, command] };
  }

  /** Nothing to make: the shim makes the process group when it starts. */
  create(): void {}

  env(): Record<string, string> {
    return {};
  }

  /** The shim's pid, once spawned, and its stdin, which the runner pings from now on. */
  started(pid: number, stdin?: Writable | null): void {
    this.root = pid;
    this.pings = stdin ?? null;
    this.pinger?.add(stdin);
  }

  readonly enforcesMemory = false;
  /** No count of its own: the runner falls back to the machine's (/proc/vmstat). */
  readonly countsOom = false;

  members(): number[] {
    const tree = this.root === null ? [] : treeMembers(this.root);
    const marked = pidsWithEnv(RUN_MARKER, this.marker, true).filter((pid) => pid !== process.pid);
    return [...new Set([...tree, ...marked])];
  }

  /**
   * RSS of the job's processes in MB, leaving out the shim itself and the git hooks Baton
   * installed (marked BATON_HOOK): the push guard's Node process is not the agent's to pay for.
   */
  memoryMb(): number {
    const hooks = new Set(pidsWithEnv('BATON_HOOK', ''));
    return rssMb(this.members().filter((pid) => pid !== this.root && !hooks.has(pid)));
  }

  peakMb(): number | null {
    return null;
  }

  oomKills(): number {
    return 0;
  }

  kill(): void {
    const marked = pidsWithEnv(RUN_MARKER, this.marker, true).filter((pid) => pid !== process.pid);
    if (this.root !== null) killTree(this.root);
    killAll(marked);
  }

  /** Kills until nothing of the job is left (about 2 s at most). */
  async close(): Promise<void> {
    this.pinger?.remove(this.pings);
    this.pings?.destroy();
    for (let round = 0; round < 100; round++) {
      const left = this.members().filter((pid) => pid !== this.root || isRunning(pid));
      if (left.length === 0) return;
      this.kill();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
