/** The host's memory, as the kernel reports it: what a new process can have without swapping. */
import { readFileSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';

export interface MemoryReading {
  readonly totalMb: number;
  readonly availableMb: number;
}

export function readMemory(): MemoryReading {
  try {
    const info = readFileSync('/proc/meminfo', 'utf8');
    const kb = (field: string): number | null => {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(info);
      return match?.[1] === undefined ? null : Number(match[1]);
    };
    const total = kb('MemTotal');
    const available = kb('MemAvailable');
    if (total !== null && available !== null) {
      return { totalMb: Math.floor(total / 1024), availableMb: Math.floor(available / 1024) };
    }
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return { totalMb: Math.floor(totalmem() / 2 ** 20), availableMb: Math.floor(freemem() / 2 ** 20) };
}

/** The kernel's count of OOM kills so far; null where /proc/vmstat does not say. */
export function readOomKills(): number | null {
  try {
    const match = /^oom_kill (\d+)$/m.exec(readFileSync('/proc/vmstat', 'utf8'));
    return match?.[1] === undefined ? null : Number(match[1]);
  } catch {
    return null;
  }
}
