/**
 * The machine's durable limit, measured in the same run as the throughput it bounds:
 *  - PostgreSQL: C connections (pg), each committing single-row UPDATEs in autocommit for a fixed
 *    time; every commit waits for its WAL flush (fsync on, synchronous_commit on). As in pgbench's
 *    simple-update, each connection updates its own row, so no commit waits on a row lock.
 *  - SQLite: P processes doing BEGIN IMMEDIATE; UPDATE one row; COMMIT, with Baton's pragmas.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { runSqliteProcs } from './sqlite-procs.js';
import { nowMs } from './stats.js';
import { withClient } from './pg-server.js';

/** Commits per second on PostgreSQL with `connections` clients during `ms`. */
export async function pgDurableRate(url: string, connections: number, ms: number): Promise<number> {
  await withClient(url, async (client) => {
    await client.query('CREATE TABLE IF NOT EXISTS counters (id int PRIMARY KEY, n bigint NOT NULL)');
    await client.query(
      'INSERT INTO counters SELECT g, 0 FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING',
      [connections],
    );
  });
  const clients = await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  try {
    const t0 = nowMs();
    const deadline = t0 + ms;
    const counts = await Promise.all(
      clients.map(async (client, index) => {
        let count = 0;
        const query = {
          name: 'bump',
          text: 'UPDATE counters SET n = n + 1 WHERE id = $1',
          values: [index + 1],
        };
        while (nowMs() < deadline) {
          await client.query(query);
          count++;
        }
        return count;
      }),
    );
    const seconds = (nowMs() - t0) / 1000;
    return counts.reduce((sum, part) => sum + part, 0) / seconds;
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

/** Commits per second on SQLite with `processes` processes during `ms`, on a fresh file. */
export async function sqliteDurableRate(path: string, processes: number, ms: number): Promise<number> {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE IF NOT EXISTS counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
  const insert = db.prepare('INSERT OR IGNORE INTO counters VALUES (?, 0)');
  for (let index = 1; index <= processes; index++) insert.run(index);
  db.close();
  const result = await runSqliteProcs((index) => ['durable', path, String(ms), String(index + 1)], processes);
  return result.count / result.seconds;
}
