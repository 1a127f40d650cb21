/**
 * A runner's containment (core/containment.ts has the table): chosen once when `baton up` joins,
 * from what this host really allows (a cgroup is made and removed to find out), then asked for
 * one scope per job. A cgroup runner also starts the reaper (reaper.ts), which kills its job
 * cgroups once the runner is gone, however it went.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import type { ContainmentChoice, ContainmentKind, ContainmentRef } from '../core/containment.js';
import { InvalidInputError } from '../core/errors.js';
import {
  cgroupPids,
  makeCgroup,
  readCgroupFile,
  readLayout,
  removeCgroup,
  tryWriteCgroupFile,
  type CgroupLayout,
} from './cgroup.js';
import { CgroupJob, emptyAndRemove, type Hierarchy } from './cgroup-scope.js';
import { GroupJob, RUN_MARKER } from './group-scope.js';
import { killAll, pidsWithEnv } from './process-tree.js';
import { Launcher } from './launcher.js';
import { startReaper, type Reaper } from './reaper.js';
import { WarmSlot, type WarmScope } from './warm-slot.js';
import { Pinger, type WatchdogOptions } from './watchdog.js';

/** One job's processes, whichever kind holds them. */
export type JobScope = CgroupJob | GroupJob;

export interface Containment {
  readonly kind: ContainmentKind;
  /** What the host row keeps, for a successor to clean up after this runner. */
  readonly ref: ContainmentRef;
  /** In words, for the log: `cgroup1 (memory, pids, freezer) under /sys/fs/cgroup/memory/…`. */
  readonly detail: string;
  /** Forks this runner's agents (cgroup kinds, where the host has mkfifo and setsid), or null. */
  readonly launcher: Launcher | null;
  /** The scope of one job; `create()` it (cgroups) before spawning into it. */
  scope(jobId: number, epoch: number, ramMb: number | null): JobScope;
  /**
   * The scope of one job made ahead, its agent's process already waiting in it (warm-slot.ts):
   * used as it is, not created. Null when none is ready, or the containment keeps none.
   */
  warmScope(jobId: number, epoch: number, ramMb: number | null): WarmScope | null;
  /** Kills anything left in this runner's scopes and removes its cgroups; idempotent. */
  close(): Promise<void>;
}

export interface ContainmentOptions {
  readonly choice: ContainmentChoice;
  /** The Node shim, for the process-group kind. */
  readonly shimPath: string;
  /** Keep a warm slot (cgroup kinds with a launcher): `baton up` does; tests of the plain path do not. */
  readonly warm?: boolean;
  /**
   * The agents' watchdog (watchdog.ts): each shim, or the reaper, kills the agents it keeps when
   * this process sends no ping for the deadline. `baton up` has one; without it, none.
   */
  readonly watchdog?: WatchdogOptions | undefined;
}

/** Opens the containment asked for; `auto` takes the best the host allows. */
export function openContainment(options: ContainmentOptions): Containment {
  const run = randomBytes(6).toString('hex');
  const layout = readLayout();
  const tries: Record<ContainmentKind, () => Hierarchy[] | null> = {
    cgroup2: () => v2Hierarchies(layout, run),
    cgroup1: () => v1Hierarchies(layout, run),
    'process-group': () => [],
  };
  if (options.choice !== 'auto') {
    const hierarchies = tries[options.choice]();
    if (hierarchies === null) {
      throw new InvalidInputError(
        `containment ${options.choice} is not available on this host (${describeLayout(layout)})`,
        'use --containment auto to take the best this host offers',
      );
    }
    return containment(options.choice, hierarchies, run, options);
  }
  // Best first: a memory controller the kernel enforces, v2 before v1; then any cgroup at all.
  const v2 = tries.cgroup2();
  if (v2 !== null && v2.some((hierarchy) => hierarchy.controllers.includes('memory')))
    return containment('cgroup2', v2, run, options);
  const v1 = tries.cgroup1();
  if (v1 !== null && (v1.some((hierarchy) => hierarchy.name === 'memory') || v2 === null)) {
    if (v2 !== null) dropBases(v2);
    return containment('cgroup1', v1, run, options);
  }
  if (v1 !== null) dropBases(v1);
  if (v2 !== null) return containment('cgroup2', v2, run, options);
  return containment('process-group', [], run, options);
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * What `--containment auto` would most likely choose here, found without making anything
 * (`baton doctor`): the cgroups this process sits in that it may write, best first as auto
 * takes them. It cannot tell whether the kernel will hand controllers down (v2 delegation);
 * `baton up` finds that out by trying, and logs its choice.
 */
export function probeContainment(): { readonly kind: ContainmentKind; readonly detail: string } {
  const layout = readLayout();
  const v2 = layout.v2 !== null && writable(layout.v2) ? layout.v2 : null;
  const v2Controllers =
    v2 === null ? [] : (readCgroupFile(v2, 'cgroup.controllers') ?? '').trim().split(/\s+/);
  const v1 = Object.entries(layout.v1).filter(([, dir]) => writable(dir));
  const v1Names = v1.map(([name]) => name);
  const v2Detail = `cgroup2 at ${v2 ?? '?'} (controllers: ${v2Controllers.join(' ') || 'none'})`;
  if (v2 !== null && v2Controllers.includes('memory')) return { kind: 'cgroup2', detail: v2Detail };
  if (v1Names.includes('memory') || (v1.length > 0 && v2 === null))
    return { kind: 'cgroup1', detail: `cgroup1 (${v1Names.join(', ')}) under ${v1[0]?.[1] ?? '?'}` };
  if (v2 !== null) return { kind: 'cgroup2', detail: `${v2Detail}: kill only, no memory limit` };
  return { kind: 'process-group', detail: `no cgroup this user may write (${describeLayout(layout)})` };
}

function dropBases(hierarchies: readonly Hierarchy[]): void {
  for (const hierarchy of hierarchies) removeCgroup(hierarchy.base);
}

function describeLayout(layout: CgroupLayout): string {
  const v1 = Object.keys(layout.v1);
  return `cgroup2 ${layout.v2 ?? 'not mounted'}; cgroup1 ${v1.length === 0 ? 'none' : v1.join(', ')}`;
}

/** The unified hierarchy's base for this runner, with memory and pids enabled where delegated. */
function v2Hierarchies(layout: CgroupLayout, run: string): Hierarchy[] | null {
  const own = layout.v2;
  if (own === null) return null;
  const available = (readCgroupFile(own, 'cgroup.controllers') ?? '').trim().split(/\s+/);
  const wanted = ['memory', 'pids'].filter((controller) => available.includes(controller));
  const enable = (dir: string): boolean =>
    wanted.length === 0 ||
    tryWriteCgroupFile(dir, 'cgroup.subtree_control', wanted.map((controller) => `+${controller}`).join(' '));
  if (!enable(own)) {
    // "No internal processes": a cgroup holding processes cannot hand controllers down. Move this
    // process into a leaf of its own cgroup (as systemd's delegation expects), then try again.
    const leaf = join(own, 'baton-daemon');
    if (makeCgroup(leaf)) tryWriteCgroupFile(leaf, 'cgroup.procs', String(process.pid));
    enable(own);
  }
  const base = join(own, `baton-${run}`);
  if (!makeCgroup(base)) return null;
  const controllers = enable(base) ? wanted : [];
  return [{ name: 'unified', base, controllers }];
}

/** A base per v1 controller this process may make cgroups under. */
function v1Hierarchies(layout: CgroupLayout, run: string): Hierarchy[] | null {
  const out: Hierarchy[] = [];
  for (const [name, own] of Object.entries(layout.v1) as [Hierarchy['name'], string][]) {
    const base = join(own, `baton-${run}`);
    if (makeCgroup(base)) out.push({ name, base, controllers: [name] });
  }
  return out.length === 0 ? null : out;
}

function containment(
  kind: ContainmentKind,
  hierarchies: Hierarchy[],
  run: string,
  options: ContainmentOptions,
): Containment {
  const bases = hierarchies.map((hierarchy) => hierarchy.base);
  const watchdog = options.watchdog ?? null;
  const pinger = watchdog === null ? null : new Pinger(watchdog);
  const reaper: Reaper | null = bases.length === 0 ? null : startReaper(bases, watchdog?.deadlineMs ?? null);
  pinger?.add(reaper?.pings);
  // The process-group kind keeps spawn(): its shim must be this process's child to watch it.
  const launcher = bases.length === 0 ? null : Launcher.open();
  const warm = launcher !== null && options.warm === true ? new WarmSlot(hierarchies, launcher) : null;
  const marker = (jobId: number, epoch: number): string => `${run}:${jobId}.${epoch}`;
  const controllers = [...new Set(hierarchies.flatMap((hierarchy) => hierarchy.controllers))];
  const detail =
    kind === 'process-group'
      ? 'process-group (the agent shim; descendants and BATON_RUN-marked processes are killed with the job)'
      : `${kind} (${controllers.length === 0 ? 'kill only' : controllers.join(', ')}) ` +
        `under ${bases.join(', ')}; reaper pid ${reaper?.pid ?? '?'}`;
  let closed: Promise<void> | null = null;
  return {
    kind,
    ref: { run, dirs: bases },
    detail,
    launcher,
    scope: (jobId, epoch, ramMb) =>
      kind === 'process-group'
        ? new GroupJob(options.shimPath, marker(jobId, epoch), pinger)
        : new CgroupJob(hierarchies, `job-${jobId}-${epoch}`, ramMb, marker(jobId, epoch)),
    warmScope: (jobId, epoch, ramMb) => warm?.take(ramMb, marker(jobId, epoch)) ?? null,
    close: () =>
      (closed ??= (async () => {
        pinger?.close();
        await warm?.close();
        killAll(pidsWithEnv(RUN_MARKER, `${run}:`).filter((pid) => pid !== process.pid));
        await emptyAndRemove(bases);
        launcher?.close();
        await reaper?.stop();
      })()),
  };
}

/**
 * What a dead predecessor left: its cgroups (killed and removed) and any process carrying its
 * run's marker. Run by the `baton up` that takes the host over, before it runs anything.
 * Returns how many processes were killed.
 */
export async function killLeftovers(ref: ContainmentRef): Promise<number> {
  const dirs = ref.dirs.filter((dir) => dir.startsWith('/') && /\/baton-[0-9a-f]+$/.test(dir));
  let killed = 0;
  for (let round = 0; round < 50; round++) {
    const marked = pidsWithEnv(RUN_MARKER, `${ref.run}:`).filter((pid) => pid !== process.pid);
    const inCgroups = dirs.flatMap((dir) => cgroupPids(dir));
    const signalled = killAll(new Set([...marked, ...inCgroups]));
    if (signalled === 0) break;
    killed += signalled;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await emptyAndRemove(dirs);
  return killed;
}
