/**
 * Wake-ups on SQLite. Migration 0006's triggers count wake-worthy changes in the one-row table
 * `wake`; while anyone waits, this polls every few milliseconds whether the file changed
 * (`PRAGMA data_version` moves when another connection commits: a read of the WAL index in
 * shared memory, no lock, no I/O) or this store wrote, and only then reads the counter.
 */
import { WakeHub, type Wakeups } from '../wakeups.js';
import type { SqliteExecutor } from './executor.js';

const POLL_MS = 2;

export function sqliteWakeups(exec: SqliteExecutor): { wakeups: Wakeups; stop: () => void } {
  const dataVersion = exec.db.prepare('PRAGMA data_version').pluck();
  // Prepared on first use: a store opened at an older schema (migration tests) has no table.
  const count = (): number =>
    exec.read(() => exec.prepare('SELECT n FROM wake WHERE id = 1').pluck().get() as number);
  let timer: NodeJS.Timeout | null = null;
  let seen = { version: 0, writes: 0, n: 0 };
  const read = () => ({ version: dataVersion.get() as number, writes: exec.writes, n: 0 });
  const poll = (): void => {
    if (!exec.db.open) return;
    try {
      const now = read();
      if (now.version === seen.version && now.writes === seen.writes) return;
      now.n = count();
      if (now.n !== seen.n) hub.wake();
      seen = now;
    } catch {
      // A timer must not crash the process: wake everyone, and their own store calls say what is wrong.
      hub.wake();
    }
  };
  const stop = (): void => {
    if (timer !== null) clearInterval(timer);
    timer = null;
  };
  const hub = new WakeHub((active) => {
    if (!active) return stop();
    if (timer !== null || !exec.db.open) return;
    try {
      seen = { ...read(), n: count() };
    } catch {
      seen = { version: -1, writes: -1, n: -1 }; // the first poll looks again
    }
    timer = setInterval(poll, POLL_MS);
    timer.unref();
  });
  return { wakeups: { waiter: (wakeFor) => Promise.resolve().then(() => hub.add(wakeFor)) }, stop };
}
