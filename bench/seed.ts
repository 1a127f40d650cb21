/**
 * Fills Baton's queue fast, straight in SQL: N tasks and one queued job each, in two
 * INSERT … SELECT statements. Setup only: the bench never times it. Enqueue audit rows are not
 * written (the drain under test writes its own). Columns left out take their defaults, so this
 * keeps working as migrations add columns with defaults.
 */
import Database from 'better-sqlite3';
import type pg from 'pg';
import { openStore } from '../src/store/open.js';
import { readyForDrain, withClient } from './pg-server.js';

/** Creates Baton's schema in the database (the store migrates on open). */
export async function migrateBaton(url: string): Promise<void> {
  const store = await openStore(url);
  await store.close();
}

/**
 * Foreign keys and secondary indexes (not those behind a constraint) of `tables`, as the
 * statements that drop and re-create them, read from the catalog so that new migrations are kept.
 */
export async function droppable(
  client: pg.Client,
  tables: readonly string[],
): Promise<{ drop: string[]; create: string[] }> {
  const fks = await client.query<{ t: string; name: string; def: string }>(
    `SELECT conrelid::regclass::text AS t, conname AS name, pg_get_constraintdef(oid) AS def
     FROM pg_constraint WHERE contype = 'f' AND conrelid::regclass::text = ANY ($1)`,
    [tables],
  );
  const indexes = await client.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes i
     WHERE schemaname = current_schema() AND tablename = ANY ($1)
       AND NOT EXISTS (SELECT 1 FROM pg_constraint k
                       WHERE k.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
    [tables],
  );
  return {
    drop: [
      ...fks.rows.map((fk) => `ALTER TABLE ${fk.t} DROP CONSTRAINT ${fk.name}`),
      ...indexes.rows.map((index) => `DROP INDEX ${index.name}`),
    ],
    create: [
      ...indexes.rows.map((index) => index.def),
      ...fks.rows.map((fk) => `ALTER TABLE ${fk.t} ADD CONSTRAINT ${fk.name} ${fk.def}`),
    ],
  };
}

/**
 * N queued jobs on PostgreSQL, keys `${prefix}-0000001…`, oldest first. A bulk load: the jobs and
 * tasks tables' foreign keys and secondary indexes are dropped, the rows inserted, and the same
 * indexes and (validated) keys re-created, which ends in the schema the migrations made. Then
 * readyForDrain: VACUUM ANALYZE and a CHECKPOINT, as before every system's drain.
 */
export async function seedBatonPg(url: string, items: number, prefix = 'bench'): Promise<void> {
  await migrateBaton(url);
  await withClient(url, async (client) => {
    const ddl = await droppable(client, ['tasks', 'jobs']);
    await client.query('BEGIN');
    for (const sql of ddl.drop) await client.query(sql);
    await client.query(
      `INSERT INTO tasks (key, priority, created_at)
       SELECT $2::text || '-' || lpad(g::text, 7, '0'), 100,
         date_trunc('milliseconds', now()) - ($1::int - g) * interval '1 millisecond'
       FROM generate_series(1, $1::int) g`,
      [items, prefix],
    );
    await client.query(
      `INSERT INTO jobs (task_id, priority, queued_at, github)
       SELECT id, priority, created_at, false FROM tasks WHERE key LIKE $1::text || '-%' ORDER BY id`,
      [prefix],
    );
    for (const sql of ddl.create) await client.query(sql);
    await client.query('COMMIT');
    await readyForDrain(client);
  });
}

/**
 * The same on SQLite (a recursive CTE for the series). No ANALYZE: Baton never runs it (nor
 * PRAGMA optimize), so its claims are planned without statistics, and so are the bench's.
 */
export async function seedBatonSqlite(path: string, items: number, prefix = 'bench'): Promise<void> {
  await migrateBaton(path);
  const db = new Database(path);
  try {
    db.pragma('busy_timeout = 5000');
    const now = Date.now();
    // Secondary indexes (those with SQL; not the ones behind UNIQUE) are re-created after the load.
    const indexes = db
      .prepare(
        `SELECT name, sql FROM sqlite_master
         WHERE type = 'index' AND tbl_name IN ('tasks', 'jobs') AND sql IS NOT NULL`,
      )
      .all() as { name: string; sql: string }[];
    db.transaction(() => {
      for (const index of indexes) db.exec(`DROP INDEX ${index.name}`);
      db.prepare(
        `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
         INSERT INTO tasks (key, priority, created_at)
         SELECT @prefix || '-' || substr('000000' || i, -7), 100, @now - (@n - i) FROM g`,
      ).run({ n: items, prefix, now });
      db.prepare(
        `INSERT INTO jobs (task_id, priority, queued_at)
         SELECT id, priority, created_at FROM tasks WHERE key LIKE @prefix || '-%' ORDER BY id`,
      ).run({ prefix });
      for (const index of indexes) db.exec(index.sql);
    }).immediate();
  } finally {
    db.close();
  }
}

/**
 * Writes `rows` ledger rows shaped as a drain writes them (decision 0023: a `job:claimed` that
 * says it started, a `job:finished` that carries its task's move), for keys that no task has, so
 * that the sealer beside a drain (ledger-on.ts) has seal work to warm up on before the drain
 * starts. Straight in SQL, as the seeds above; the ledger takes inserts only.
 */
export async function seedLedgerWarmup(url: string, rows: number): Promise<void> {
  const claimed = `{"attempt":1,"host":"warm","started":true}`;
  const finished = `{"status":"done","exitCode":0,"task":{"from":"open","to":"done"}}`;
  if (url.startsWith('postgres')) {
    await withClient(url, (client) =>
      client.query(
        `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
         SELECT date_trunc('milliseconds', now()), CASE WHEN g % 2 = 1 THEN 'job:claimed' ELSE 'job:finished' END,
           'warm-' || lpad(((g + 1) / 2)::text, 7, '0'), 1000000000 + (g + 1) / 2, 1000000000, 'warm', 1,
           (CASE WHEN g % 2 = 1 THEN $2 ELSE $3 END)::jsonb
         FROM generate_series(1, $1::int) g`,
        [rows, claimed, finished],
      ),
    );
    return;
  }
  const db = new Database(url);
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(
      `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
       INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
       SELECT @now, CASE WHEN i % 2 = 1 THEN 'job:claimed' ELSE 'job:finished' END,
         'warm-' || substr('000000' || ((i + 1) / 2), -7), 1000000000 + (i + 1) / 2, 1000000000, 'warm', 1,
         CASE WHEN i % 2 = 1 THEN @claimed ELSE @finished END
       FROM g`,
    ).run({ n: rows, now: Date.now(), claimed, finished });
  } finally {
    db.close();
  }
}
