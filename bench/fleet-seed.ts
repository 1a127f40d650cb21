/**
 * A fleet in the database, straight in SQL, for the dispatcher and heartbeat measures (setup
 * only: never timed). Columns left out take their defaults, so this keeps working as migrations
 * add columns with defaults.
 *
 *  - seedHistory: `finished` done jobs (the table's history) and `queued` queued jobs, each with a
 *    task of its own, as a bulk load (secondary indexes and foreign keys dropped and re-created).
 *  - addHosts: hosts `host-0001…`, each served by a live daemon session of its own, with
 *    `active` running jobs each (and their tasks), as `baton up` and its runner would leave them.
 *  - addClaimedSessions: live agent sessions, each holding the claim on a task of its own, as
 *    the agents of a fleet do while they work.
 */
import Database from 'better-sqlite3';
import { withClient, readyForDrain } from './pg-server.js';
import { droppable, migrateBaton } from './seed.js';

/** A host's name: `host-0001`; zero-padded so that names sort as numbers up to 9,999 hosts. */
export const hostName = (index: number): string => `host-${String(index).padStart(4, '0')}`;

/** Hosts' capacity as seeded: RAM no job budget comes near, and slots for `slotsMax` jobs. */
export const HOST_RAM_MB = 1_048_576;

export interface History {
  readonly queued: number;
  readonly finished: number;
}

const isPg = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

/** `finished` done jobs and `queued` queued jobs, with their tasks, on either engine. */
export async function seedHistory(url: string, history: History): Promise<void> {
  await migrateBaton(url);
  if (isPg(url)) await seedHistoryPg(url, history);
  else seedHistorySqlite(url, history);
}

async function seedHistoryPg(url: string, history: History): Promise<void> {
  await withClient(url, async (client) => {
    const ddl = await droppable(client, ['tasks', 'jobs']);
    await client.query('BEGIN');
    for (const sql of ddl.drop) await client.query(sql);
    const tasks = `INSERT INTO tasks (key, priority, created_at)
      SELECT $2::text || '-' || lpad(g::text, 7, '0'), 100,
        date_trunc('milliseconds', now()) - ($1::int - g + $3::int) * interval '1 millisecond'
      FROM generate_series(1, $1::int) g`;
    await client.query(tasks, [history.finished, 'done', 86_400_000]);
    await client.query(
      `INSERT INTO jobs (task_id, status, priority, queued_at, attempt, epoch, host, claimed_at,
         started_at, finished_at, exit_code, github)
       SELECT id, 'done', priority, created_at, 1, 1, 'gone', created_at, created_at, created_at, 0, false
       FROM tasks WHERE key LIKE 'done-%' ORDER BY id`,
    );
    await client.query(tasks, [history.queued, 'queued', 0]);
    await client.query(
      `INSERT INTO jobs (task_id, priority, queued_at, github)
       SELECT id, priority, created_at, false FROM tasks WHERE key LIKE 'queued-%' ORDER BY id`,
    );
    for (const sql of ddl.create) await client.query(sql);
    await client.query('COMMIT');
    await readyForDrain(client);
  });
}

function seedHistorySqlite(path: string, history: History): void {
  onSqlite(path, (db) => {
    const now = Date.now();
    const indexes = db
      .prepare(
        `SELECT name, sql FROM sqlite_master
         WHERE type = 'index' AND tbl_name IN ('tasks', 'jobs') AND sql IS NOT NULL`,
      )
      .all() as { name: string; sql: string }[];
    const tasks = db.prepare(
      `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
       INSERT INTO tasks (key, priority, created_at)
       SELECT @prefix || '-' || substr('000000' || i, -7), 100, @now - (@n - i + @ago) FROM g`,
    );
    db.transaction(() => {
      for (const index of indexes) db.exec(`DROP INDEX ${index.name}`);
      tasks.run({ n: history.finished, prefix: 'done', now, ago: 86_400_000 });
      db.exec(
        `INSERT INTO jobs (task_id, status, priority, queued_at, attempt, epoch, host, claimed_at,
           started_at, finished_at, exit_code)
         SELECT id, 'done', priority, created_at, 1, 1, 'gone', created_at, created_at, created_at, 0
         FROM tasks WHERE key LIKE 'done-%' ORDER BY id`,
      );
      tasks.run({ n: history.queued, prefix: 'queued', now, ago: 0 });
      db.exec(
        `INSERT INTO jobs (task_id, priority, queued_at)
         SELECT id, priority, created_at FROM tasks WHERE key LIKE 'queued-%' ORDER BY id`,
      );
      for (const index of indexes) db.exec(index.sql);
    }).immediate();
  });
}

/**
 * Hosts `from`…`to` (inclusive), each with a live daemon session, `slotsMax` slots and `active`
 * running jobs placed under term 1, heartbeating now.
 */
export async function addHosts(
  url: string,
  range: { readonly from: number; readonly to: number },
  active: number,
  slotsMax: number,
): Promise<void> {
  const names = { from: hostName(range.from), to: hostName(range.to) };
  if (isPg(url)) {
    await withClient(url, async (client) => {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
         SELECT 'daemon', 'host-' || lpad(g::text, 4, '0'), 1, 'baton up', ${PG_NOW}, ${PG_NOW}
         FROM generate_series($1::int, $2::int) g`,
        [range.from, range.to],
      );
      await client.query(
        `INSERT INTO hosts (name, enabled, session_id, ram_total_mb, ram_reserved_mb, ram_free_mb,
           slots_max, heartbeat_at, registered_at)
         SELECT s.host, true, s.id, $3::int, 512, $3::int, $4::int, s.started_at, s.started_at
         FROM sessions s WHERE s.kind = 'daemon' AND s.state = 'live' AND s.host BETWEEN $1 AND $2`,
        [names.from, names.to, HOST_RAM_MB, slotsMax],
      );
      const { rows } = await client.query<{ id: string }>('SELECT coalesce(max(id), 0) AS id FROM tasks');
      await client.query(
        `INSERT INTO tasks (key, priority, created_at)
         SELECT h.name || '/active-' || k, 100, ${PG_NOW}
         FROM hosts h, generate_series(1, $3::int) k WHERE h.name BETWEEN $1 AND $2`,
        [names.from, names.to, active],
      );
      await client.query(
        `INSERT INTO jobs (task_id, status, priority, queued_at, attempt, epoch, session_id, host,
           term, claimed_at, started_at, github)
         SELECT t.id, 'running', 100, t.created_at, 1, 1, h.session_id, h.name, 1, t.created_at,
           t.created_at, false
         FROM tasks t JOIN hosts h ON h.name = split_part(t.key, '/', 1)
         WHERE t.id > $1::bigint`,
        [rows[0]?.id ?? 0],
      );
      await client.query('COMMIT');
      await client.query('ANALYZE');
    });
    return;
  }
  onSqlite(url, (db) => {
    db.transaction(() => {
      const now = Date.now();
      const series = `WITH RECURSIVE g(i) AS (
        SELECT CAST(@from AS INTEGER) UNION ALL SELECT i + 1 FROM g WHERE i < @to)`;
      db.prepare(
        `${series} INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
         SELECT 'daemon', 'host-' || substr('000' || i, -4), 1, 'baton up', @now, @now FROM g`,
      ).run({ ...range, now });
      db.prepare(
        `INSERT INTO hosts (name, enabled, session_id, ram_total_mb, ram_reserved_mb, ram_free_mb,
           slots_max, heartbeat_at, registered_at)
         SELECT s.host, 1, s.id, @ram, 512, @ram, @slots, s.started_at, s.started_at
         FROM sessions s WHERE s.kind = 'daemon' AND s.state = 'live' AND s.host BETWEEN @from AND @to`,
      ).run({ ...names, ram: HOST_RAM_MB, slots: slotsMax });
      const before = (db.prepare('SELECT coalesce(max(id), 0) AS id FROM tasks').get() as { id: number }).id;
      db.prepare(
        `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < @active)
         INSERT INTO tasks (key, priority, created_at)
         SELECT h.name || '/active-' || k.i, 100, @now FROM hosts h, k WHERE h.name BETWEEN @from AND @to`,
      ).run({ ...names, active, now });
      db.prepare(
        `INSERT INTO jobs (task_id, status, priority, queued_at, attempt, epoch, session_id, host,
           term, claimed_at, started_at)
         SELECT t.id, 'running', 100, t.created_at, 1, 1, h.session_id, h.name, 1, t.created_at,
           t.created_at
         FROM tasks t JOIN hosts h ON h.name = substr(t.key, 1, instr(t.key, '/') - 1)
         WHERE t.id > @before`,
      ).run({ before });
    }).immediate();
  });
}

/** Sets every host's slots: a number, or 'full' (as many as it has jobs active: saturated). */
export async function setSlots(url: string, slots: number | 'full'): Promise<void> {
  const active = `(SELECT count(*) FROM jobs j WHERE j.host = hosts.name AND j.status IN ('claimed', 'running'))`;
  const value = slots === 'full' ? active : String(slots);
  if (isPg(url)) {
    await withClient(url, (client) => client.query(`UPDATE hosts SET slots_max = ${value}`));
    return;
  }
  onSqlite(url, (db) => db.exec(`UPDATE hosts SET slots_max = ${value}`));
}

/**
 * `count` live agent sessions (ids returned), each holding the claim (epoch 1) on a task of its
 * own, `agent-<first>-…`; `first` keeps keys apart across calls.
 */
export async function addClaimedSessions(
  url: string,
  first: number,
  count: number,
): Promise<{ session: number; key: string }[]> {
  const key = (index: number): string => `agent-${String(first + index).padStart(7, '0')}`;
  if (isPg(url)) {
    return withClient(url, async (client) => {
      const { rows } = await client.query<{ id: string; key: string }>(
        `WITH s AS (
           INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
           SELECT 'agent', 'bench', 1, 'agent-' || lpad(g::text, 7, '0'), ${PG_NOW}, ${PG_NOW}
           FROM generate_series($1::int, $1::int + $2::int - 1) g
           RETURNING id, name, started_at
         ), t AS (
           INSERT INTO tasks (key, created_at, epoch, holder_session_id, claimed_at)
           SELECT name, started_at, 1, id, started_at FROM s
           RETURNING id, holder_session_id, claimed_at
         ), c AS (
           INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
           SELECT id, holder_session_id, 1, claimed_at, claimed_at FROM t
         )
         SELECT id, name AS key FROM s ORDER BY id`,
        [first, count],
      );
      return rows.map((row) => ({ session: Number(row.id), key: row.key }));
    });
  }
  return onSqlite(url, (db) =>
    db
      .transaction(() => {
        const now = Date.now();
        const session = db.prepare(
          `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
           VALUES ('agent', 'bench', 1, ?, ?, ?) RETURNING id`,
        );
        const task = db.prepare(
          `INSERT INTO tasks (key, created_at, epoch, holder_session_id, claimed_at)
           VALUES (?, ?, 1, ?, ?) RETURNING id`,
        );
        const claim = db.prepare(
          `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at) VALUES (?, ?, 1, ?, ?)`,
        );
        return Array.from({ length: count }, (_, index) => {
          const id = (session.get(key(index), now, now) as { id: number }).id;
          const taskId = (task.get(key(index), now, id, now) as { id: number }).id;
          claim.run(taskId, id, now, now);
          return { session: id, key: key(index) };
        });
      })
      .immediate(),
  );
}

const PG_NOW = `date_trunc('milliseconds', now())`;

function onSqlite<T>(path: string, work: (db: Database.Database) => T): T {
  const db = new Database(path);
  try {
    db.pragma('busy_timeout = 5000');
    return work(db);
  } finally {
    db.close();
  }
}
