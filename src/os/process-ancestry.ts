/**
 * Who ran this process, read from /proc: a hook runs under a shell that the program it serves
 * (Claude Code) spawned, and a keeper outlives the hook to watch that program. A process is known
 * by its pid and its start time, so a pid reused after it died is never taken for it.
 */
import { readFileSync } from 'node:fs';

export interface ProcessIdentity {
  readonly pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat, field 22). */
  readonly startTicks: number;
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'fish', 'busybox', 'env', 'timeout']);

function statFields(pid: number): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The process's identity, or null when it does not exist (or /proc cannot tell). */
export function processIdentity(pid: number): ProcessIdentity | null {
  const fields = statFields(pid);
  // Field 3 (state) is fields[0]; field 22 (starttime) is fields[19]. A zombie has exited.
  if (fields === null || fields[0] === 'Z') return null;
  return { pid, startTicks: Number(fields[19]) };
}

/** Whether that very process still runs. */
export function isRunning(id: ProcessIdentity): boolean {
  return processIdentity(id.pid)?.startTicks === id.startTicks;
}

function parentOf(pid: number): number | null {
  const fields = statFields(pid);
  const ppid = fields === null ? NaN : Number(fields[1]);
  return Number.isInteger(ppid) && ppid > 1 ? ppid : null;
}

function nameOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/**
 * The nearest ancestor of this process that is not a shell: the program that ran us through
 * `sh -c` (Claude Code runs each hook so). Null when /proc cannot tell.
 */
export function invokingProgram(): ProcessIdentity | null {
  let pid: number | null = process.ppid;
  for (let depth = 0; pid !== null && depth < 8; depth++) {
    if (!SHELLS.has(nameOf(pid))) return processIdentity(pid);
    pid = parentOf(pid);
  }
  return null;
}
