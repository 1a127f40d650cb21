/**
 * The SQLite side of `baton db copy`: the file under its write lock (BEGIN IMMEDIATE: one snapshot
 * for every check and every row the copy takes, and no writer until close), its quiescence facts, its
 * ledger's last checkpoint, its tables' rows a page at a time as the driver reads them (times in ms),
 * and the "moved" mark (moved.ts) committed once PostgreSQL has committed.
 */
import Database from 'better-sqlite3';
import { COPIED_TABLES } from '../copy-plan.js';
import type { CopySource, LastCheckpoint, QuiescenceFacts } from '../db-copy.js';
import { ConflictError } from '../../core/errors.js';
import { MOVED_SETTING, fenceMovedFile, movedMark, movedRefusal } from './moved.js';
import { addonPath } from './sqlite-store.js';

const PAGE_ROWS = 500;

/** Keyset order per table: its primary key, so a page continues where the last one stopped. */
const ORDER: Readonly<Record<string, readonly string[]>> = {
  workspaces: ['name'],
  projects: ['name'],
  agents: ['name'],
  task_deps: ['task_id', 'depends_on'],
  progress: ['session_id'],
  output_chunks: ['job_id', 'attempt', 'start_byte', 'epoch'],
  hosts: ['name'],
  tokens: ['id'],
  leases: ['name'],
  settings: ['name'],
  github_sync: ['repo'],
  job_retention: ['status'],
  ledger_keys: ['id'],
};

export function openCopySource(path: string): CopySource {
  const db = new Database(path, { fileMustExist: true, nativeBinding: addonPath() });
  db.pragma('busy_timeout = 5000');
  const mark = movedMark(db);
  if (mark !== null) {
    db.close();
    throw movedRefusal(path, mark);
  }
  // The file's write lock from here to close(): every check and every row the copy reads is one
  // snapshot, and no writer (a `baton serve`, a late `baton up`) slips in between them and the mark.
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    db.close();
    throw new ConflictError(
      `${path} is being written (${(error as Error).message}): the copy needs its write lock`,
      'stop every baton up and baton serve on the file, then copy again',
    );
  }
  const count = (sql: string): number => Number((db.prepare(sql).pluck().get() as number | null) ?? 0);
  return {
    quiescence: () => quiescence(db),
    lastCheckpoint: () => lastCheckpoint(db),
    count: (table) => count(`SELECT count(*) FROM ${table}`),
    maxId: (table) => {
      const seq = table === 'audit_events' || table === 'effects' ? sequenceOf(db, table) : 0;
      const ceiling = table === 'jobs' ? count('SELECT coalesce(max(max_id), 0) FROM job_retention') : 0;
      return Math.max(count(`SELECT coalesce(max(id), 0) FROM ${table}`), seq, ceiling);
    },
    pages: (table) => pages(db, table),
    markMoved: (value) => {
      db.prepare('INSERT INTO settings (name, value, updated_at, updated_by) VALUES (?, ?, ?, ?)').run(
        MOVED_SETTING,
        value,
        Date.now(),
        'baton db copy',
      );
      fenceMovedFile(db, value);
      db.exec('COMMIT');
    },
    close: () => {
      // Not marked (a refusal, a dry run, a failed copy): nothing was written, the lock is let go.
      if (db.inTransaction) db.exec('ROLLBACK');
      db.close();
    },
  };
}

/** The highest id AUTOINCREMENT ever gave out, pruned rows included. */
function sequenceOf(db: Database.Database, table: string): number {
  const row = db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table);
  return typeof row === 'number' ? row : 0;
}

function quiescence(db: Database.Database): QuiescenceFacts {
  const ids = (sql: string): number[] => db.prepare(sql).pluck().all() as number[];
  return {
    liveSessions: db
      .prepare(`SELECT id, kind, host FROM sessions WHERE state = 'live' ORDER BY id LIMIT 20`)
      .all() as QuiescenceFacts['liveSessions'],
    activeJobs: ids(`SELECT id FROM jobs WHERE status IN ('claimed', 'running') ORDER BY id LIMIT 20`),
    heldTasks: db
      .prepare('SELECT key FROM tasks WHERE holder_session_id IS NOT NULL ORDER BY key LIMIT 20')
      .pluck()
      .all() as string[],
    heldWorkspaces: db.prepare('SELECT workspace FROM workspace_locks LIMIT 20').pluck().all() as string[],
    ledgerRows: Number(db.prepare('SELECT count(*) FROM audit_events').pluck().get()),
  };
}

function lastCheckpoint(db: Database.Database): LastCheckpoint | null {
  const row = db
    .prepare(
      `SELECT c.seq, c.kind, c.first_id AS firstId, c.last_id AS lastId, c.hash, c.key_id AS keyId,
              k.public_key AS publicKey, c.sealed_at AS sealedAt
         FROM audit_checkpoints c LEFT JOIN ledger_keys k ON k.id = c.key_id
        ORDER BY c.seq DESC LIMIT 1`,
    )
    .get() as LastCheckpoint | undefined;
  return row ?? null;
}

function* pages(db: Database.Database, table: string): Generator<Record<string, unknown>[]> {
  const keys = ORDER[table] ?? ['id'];
  const known = COPIED_TABLES.some((copied) => copied.table === table);
  if (!known) throw new Error(`${table} is not a copied table`);
  const order = keys.join(', ');
  const after = `(${order}) > (${keys.map((key) => `@${key}`).join(', ')})`;
  const first = db.prepare(`SELECT * FROM ${table} ORDER BY ${order} LIMIT ${PAGE_ROWS}`);
  const next = db.prepare(`SELECT * FROM ${table} WHERE ${after} ORDER BY ${order} LIMIT ${PAGE_ROWS}`);
  let page = first.all() as Record<string, unknown>[];
  while (page.length > 0) {
    yield page;
    if (page.length < PAGE_ROWS) return;
    const last = page[page.length - 1] ?? {};
    page = next.all(Object.fromEntries(keys.map((key) => [key, last[key]]))) as Record<string, unknown>[];
  }
}
