/**
 * One process of the sealer-load test's steady write load: write transactions of `rows` ledger
 * rows each, through the SQLite engine's executor (the path of every port call: `later` around
 * `write`, with its waits on a locked file), one after the other without pause until its parent
 * creates the stop file. Like the drain loop of a worker (bench/drain-loop.ts), it awaits each
 * commit, and a call that finds the lock free resolves through microtasks alone: while it keeps
 * winning, the process's event loop does not turn (an IPC message would not arrive, hence the
 * file). The connection has the engine's pragmas (sqlite-store.ts).
 *
 *   node load-writer.js <db path> <rows a transaction> <stop file>
 */
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { SqliteExecutor } from '../../src/store/sqlite/executor.js';
import { appendAudit } from '../../src/store/sqlite/rows.js';

const [path, rowsRaw, stopFile] = process.argv.slice(2);
if (path === undefined || stopFile === undefined)
  throw new Error('usage: load-writer <db> <rows> <stop file>');
const rows = Number(rowsRaw ?? 200);
const db = new Database(path);
db.pragma('busy_timeout = 25');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
const exec = new SqliteExecutor(db);
const commit = (): Promise<void> =>
  exec.later(() =>
    Promise.resolve(
      exec.write(() => {
        const at = exec.now();
        for (let row = 0; row < rows; row++) appendAudit(exec, { at, type: 'task:added', detail: { row } });
      }),
    ),
  );
process.send?.({ type: 'ready' });
let commits = 0;
while (!existsSync(stopFile)) {
  await commit();
  commits++;
}
db.close();
process.send?.({ type: 'done', written: commits * rows });
process.disconnect?.();
