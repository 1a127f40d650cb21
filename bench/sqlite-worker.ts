/**
 * One SQLite bench process, forked by sqlite-procs.ts. It prepares, says `ready`, waits for `go`,
 * works, and answers `done` with its count. Modes:
 *   drain   <path> <workers>   Baton's full path through the store (drain-loop.ts), <workers> loops
 *   durable <path> <ms> <row>  BEGIN IMMEDIATE; UPDATE one row; COMMIT, for <ms>, with the pragmas
 *                              Baton's engine uses (WAL, synchronous = FULL, busy_timeout 1000)
 */
import Database from 'better-sqlite3';
import { hostname } from 'node:os';
import { openStore } from '../src/store/open.js';
import { nowMs } from './stats.js';
import { drainLoop } from './drain-loop.js';

export type ParentMessage = { readonly type: 'go' };
export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly count: number; readonly firstAt: number; readonly endAt: number };

const send = (message: ChildMessage): void => {
  process.send?.(message);
};
const go = (): Promise<void> =>
  new Promise((resolve) =>
    process.once('message', (message: ParentMessage) => message.type === 'go' && resolve()),
  );

async function drain(path: string, workers: number): Promise<void> {
  const store = await openStore(path);
  const start = () => store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid });
  const sessions = await Promise.all(Array.from({ length: workers }, start));
  send({ type: 'ready' });
  await go();
  let firstAt = Number.NaN;
  const onFirst = (): void => {
    if (Number.isNaN(firstAt)) firstAt = nowMs() + performance.timeOrigin;
  };
  const counts = await Promise.all(sessions.map((session) => drainLoop(store, session.id, onFirst)));
  const endAt = nowMs() + performance.timeOrigin;
  for (const session of sessions) await store.sessions.end(session.id);
  await store.close();
  send({ type: 'done', count: counts.reduce((sum, part) => sum + part, 0), firstAt, endAt });
}

async function durable(path: string, ms: number, row: number): Promise<void> {
  const db = new Database(path);
  db.pragma('busy_timeout = 1000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const begin = db.prepare('BEGIN IMMEDIATE');
  const update = db.prepare('UPDATE counters SET n = n + 1 WHERE id = ?');
  const commit = db.prepare('COMMIT');
  send({ type: 'ready' });
  await go();
  let count = 0;
  const firstAt = nowMs() + performance.timeOrigin;
  const deadline = nowMs() + ms;
  while (nowMs() < deadline) {
    try {
      begin.run();
    } catch (error) {
      // Baton's executor retries a busy BEGIN IMMEDIATE the same way.
      if ((error as { code?: string }).code === 'SQLITE_BUSY') continue;
      throw error;
    }
    update.run(row);
    commit.run();
    count++;
  }
  const endAt = nowMs() + performance.timeOrigin;
  db.close();
  send({ type: 'done', count, firstAt, endAt });
}

const [mode, path, amountArg, rowArg] = process.argv.slice(2);
if (path === undefined)
  throw new Error('usage: sqlite-worker drain <path> <workers> | durable <path> <ms> <row>');
if (mode === 'drain') await drain(path, Number(amountArg ?? 1));
else if (mode === 'durable') await durable(path, Number(amountArg), Number(rowArg));
else throw new Error(`bench: unknown mode ${mode}`);
process.disconnect?.();
