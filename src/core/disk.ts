/** When a host's free disk space is low enough for `baton hosts` to flag it. */

/** Under this much free space (MB), or under DISK_LOW_SHARE of the whole, a host's disk is low. */
const DISK_LOW_MB = 1024;
const DISK_LOW_SHARE = 0.05;

export function diskLow(freeMb: number, totalMb: number): boolean {
  return freeMb < DISK_LOW_MB || freeMb < totalMb * DISK_LOW_SHARE;
}
