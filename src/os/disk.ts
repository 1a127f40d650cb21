/** Free and total space of the file system holding a directory (or its nearest existing parent). */
import { statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const MB = 1024 * 1024;

export function readDisk(dir: string): { freeMb: number; totalMb: number } | null {
  for (let at = resolve(dir); ; at = dirname(at)) {
    try {
      const stats = statfsSync(at);
      return {
        freeMb: Math.floor((stats.bavail * stats.bsize) / MB),
        totalMb: Math.floor((stats.blocks * stats.bsize) / MB),
      };
    } catch {
      if (dirname(at) === at) return null;
    }
  }
}
