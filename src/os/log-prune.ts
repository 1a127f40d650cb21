/**
 * Prunes the job logs of a log directory by age and by total size (issue 14, item 4): logs older
 * than `maxAgeMs` go, then the oldest go until the rest fit in `maxBytes`. Only files named like a
 * job's log are considered, and the logs of running jobs (`inUse`) are never removed.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

// A job's log, or one set aside as another database's (daemon/job-log.ts).
const JOB_LOG = /^job-\d+-attempt-\d+(\.before-\d+)?\.log$/;

export interface LogPrunePolicy {
  readonly maxAgeMs: number;
  readonly maxBytes: number;
}

export interface PrunedLogs {
  readonly removed: readonly string[];
  readonly freedBytes: number;
}

export function pruneLogs(
  dir: string,
  policy: LogPrunePolicy,
  nowMs: number,
  inUse: (name: string) => boolean,
): PrunedLogs {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => JOB_LOG.test(name));
  } catch {
    return { removed: [], freedBytes: 0 }; // no logs yet
  }
  const logs = names
    .map((name) => {
      try {
        const st = statSync(join(dir, name));
        return st.isFile() ? { name, bytes: st.size, mtimeMs: st.mtimeMs } : null;
      } catch {
        return null; // removed meanwhile
      }
    })
    .filter((log): log is { name: string; bytes: number; mtimeMs: number } => log !== null)
    .sort((older, newer) => older.mtimeMs - newer.mtimeMs);
  let total = logs.reduce((sum, log) => sum + log.bytes, 0);
  const removed: string[] = [];
  let freedBytes = 0;
  for (const log of logs) {
    if (inUse(log.name)) continue;
    if (nowMs - log.mtimeMs <= policy.maxAgeMs && total <= policy.maxBytes) continue;
    try {
      rmSync(join(dir, log.name), { force: true });
    } catch {
      continue;
    }
    removed.push(log.name);
    freedBytes += log.bytes;
    total -= log.bytes;
  }
  return { removed, freedBytes };
}
