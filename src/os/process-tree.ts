/**
 * The process tree of an agent, read from /proc: its members, their total resident memory, and
 * a kill that reaches every member even when one moved to another process group; and whether a
 * process exists at all.
 */
import { readdirSync, readFileSync } from 'node:fs';

const PAGE_BYTES = 4096;

interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(fields[1]), pgid: Number(fields[2]) };
  } catch {
    return null;
  }
}

function allProcesses(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat !== null) out.push(stat);
  }
  return out;
}

/**
 * Whether a process with this pid runs on this machine: EPERM means it does (someone else's); a
 * zombie (killed, not yet reaped by its parent) does not run.
 */
export function processExists(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true; // no /proc (not Linux): the signal test is all there is
  }
}

/** The root, its process group, and every descendant of either. */
export function treeMembers(rootPid: number): number[] {
  const procs = allProcesses();
  const members = new Set<number>([rootPid]);
  for (const proc of procs) if (proc.pgid === rootPid) members.add(proc.pid);
  let grew = true;
  while (grew) {
    grew = false;
    for (const stat of procs) {
      if (!members.has(stat.pid) && members.has(stat.ppid)) {
        members.add(stat.pid);
        grew = true;
      }
    }
  }
  return [...members].filter((pid) => readStat(pid) !== null);
}

/** Resident memory of these processes in MB. */
export function rssMb(pids: Iterable<number>): number {
  let pages = 0;
  for (const pid of pids) {
    try {
      pages += Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1] ?? 0);
    } catch {
      // The process ended between listing and reading.
    }
  }
  return (pages * PAGE_BYTES) / (1024 * 1024);
}

/**
 * The processes whose environment holds `name=value…` (a value starting with `prefix`, or equal to
 * it when `exact`). A process
 * that called setsid and was orphaned is no longer anyone's descendant, but it still carries
 * the environment it was started with: the run's marker finds it. (One that cleared its
 * environment is not found; the cgroup kinds of containment have no such gap.)
 */
export function pidsWithEnv(name: string, prefix: string, exact = false): number[] {
  const needle = Buffer.from(`${name}=${prefix}${exact ? '\0' : ''}`);
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let env: Buffer;
    try {
      env = readFileSync(`/proc/${entry}/environ`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (let at = env.indexOf(needle); at !== -1; at = env.indexOf(needle, at + 1)) {
      if (at === 0 || env[at - 1] === 0) {
        out.push(Number(entry));
        break;
      }
    }
  }
  return out;
}

/** SIGKILLs each pid; returns how many were signalled. */
export function killAll(pids: Iterable<number>): number {
  let signalled = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
      signalled++;
    } catch {
      // Already gone.
    }
  }
  return signalled;
}

/** SIGKILLs the process group and every descendant. Returns the pids signalled. */
export function killTree(rootPid: number): number[] {
  const members = treeMembers(rootPid);
  try {
    process.kill(-rootPid, 'SIGKILL');
  } catch {
    // No such group any more.
  }
  for (const pid of members) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return members;
}
