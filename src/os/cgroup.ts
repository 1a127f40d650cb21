/**
 * The machine's cgroups, as this process may use them: where each hierarchy is mounted, which
 * cgroup this process is in, and the file operations a job's cgroup needs (make, limit, list,
 * kill, remove). Baton only ever works below its own cgroup, as a delegated subtree, so the
 * limits of whatever started it (systemd, a container, a CI sandbox) keep applying to its jobs.
 */
import { mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The v1 controllers Baton uses: memory for budgets and OOM, pids for a cap, freezer for a clean kill. */
const V1_CONTROLLERS = ['memory', 'pids', 'freezer'] as const;
export type V1Controller = (typeof V1_CONTROLLERS)[number];

export interface CgroupLayout {
  /** This process's cgroup directory in the unified (v2) hierarchy, if one is mounted and reachable. */
  readonly v2: string | null;
  /** This process's cgroup directory per v1 controller, for those mounted and reachable. */
  readonly v1: Partial<Record<V1Controller, string>>;
}

interface Mount {
  readonly root: string;
  readonly point: string;
  readonly type: string;
  readonly options: readonly string[];
}

function mounts(): Mount[] {
  const out: Mount[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fields = left.split(' ');
    const [type = '', , superOptions = ''] = right.split(' ');
    const unescape = (text: string): string =>
      text.replace(/\\(\d{3})/g, (_, digits: string) => String.fromCharCode(parseInt(digits, 8)));
    out.push({
      root: unescape(fields[3] ?? '/'),
      point: unescape(fields[4] ?? ''),
      type,
      options: superOptions.split(','),
    });
  }
  return out;
}

/** The directory of cgroup `path` (as /proc/self/cgroup names it) under a mount of its hierarchy. */
function under(mount: Mount, path: string): string | null {
  const root = mount.root === '/' ? '' : mount.root;
  if (root !== '' && path !== root && !path.startsWith(`${root}/`)) return null;
  return join(mount.point, path.slice(root.length));
}

/** Where this process sits in each hierarchy; empty where /proc says nothing (not Linux). */
export function readLayout(): CgroupLayout {
  let lines: string[];
  let all: Mount[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    all = mounts();
  } catch {
    return { v2: null, v1: {} };
  }
  let v2: string | null = null;
  const v1: Partial<Record<V1Controller, string>> = {};
  for (const line of lines) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, id = '', controllers = '', path = ''] = match;
    if (id === '0' && controllers === '') {
      const mount = all.find((entry) => entry.type === 'cgroup2');
      v2 = mount === undefined ? null : under(mount, path);
      continue;
    }
    for (const controller of V1_CONTROLLERS) {
      if (!controllers.split(',').includes(controller)) continue;
      const mount = all.find((entry) => entry.type === 'cgroup' && entry.options.includes(controller));
      const dir = mount === undefined ? null : under(mount, path);
      if (dir !== null) v1[controller] = dir;
    }
  }
  return { v2, v1 };
}

/** Reads a cgroup file; null when it is not there. */
export function readCgroupFile(dir: string, file: string): string | null {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch {
    return null;
  }
}

function writeCgroupFile(dir: string, file: string, value: string): void {
  writeFileSync(join(dir, file), value);
}

/** Whether a write succeeds; for optional knobs (swap limits, oom.group) that older kernels lack. */
export function tryWriteCgroupFile(dir: string, file: string, value: string): boolean {
  try {
    writeCgroupFile(dir, file, value);
    return true;
  } catch {
    return false;
  }
}

/** Makes a cgroup (and its parents); true when it exists afterwards. */
export function makeCgroup(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** The pids in the cgroup and every cgroup below it. */
export function cgroupPids(dir: string): number[] {
  const out: number[] = [];
  const text = readCgroupFile(dir, 'cgroup.procs');
  if (text !== null) for (const pid of text.split('\n')) if (pid !== '') out.push(Number(pid));
  for (const child of subgroups(dir)) out.push(...cgroupPids(child));
  return out;
}

/** The cgroups directly below `dir`. */
function subgroups(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(dir, entry.name));
  } catch {
    return [];
  }
}

/** A number from a flat-keyed file such as memory.events (`oom_kill 3`); 0 when absent. */
export function readKeyed(dir: string, file: string, key: string): number {
  const text = readCgroupFile(dir, file);
  const match = text === null ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

/** A file holding one number (memory.current, memory.usage_in_bytes); null when absent. */
export function readNumber(dir: string, file: string): number | null {
  const text = readCgroupFile(dir, file);
  if (text === null) return null;
  const value = Number(text.trim());
  return Number.isFinite(value) ? value : null;
}

/** Removes a cgroup and those below it, deepest first; cgroups still holding processes stay. */
export function removeCgroup(dir: string): boolean {
  for (const child of subgroups(dir)) removeCgroup(child);
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** SIGKILLs every process listed in the cgroups; returns how many were signalled. */
export function signalAll(dirs: readonly string[]): number {
  let signalled = 0;
  for (const dir of dirs) {
    for (const pid of cgroupPids(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
        signalled++;
      } catch {
        // It exited meanwhile.
      }
    }
  }
  return signalled;
}
