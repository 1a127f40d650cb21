/**
 * `baton db backup`'s engine half (docs/decisions/0050-an-online-sqlite-backup.md): SQLite's
 * online backup API, through better-sqlite3, copies a consistent snapshot of a database that
 * `baton up` goes on writing, and a read-only look at the copy before the command names it.
 */
import Database from 'better-sqlite3';
import { addonPath } from './sqlite-store.js';

/** How long one attempt waits for a writer's lock before SQLite says busy (ms). */
const BUSY_TIMEOUT_MS = 5_000;
/** Pages per backup step: all of them, so the copy is one read of one snapshot and never restarts. */
const ALL_PAGES = 0x7fffffff;

/**
 * Copies the database at `source` into `copy`, an empty file the caller made (0600: SQLite
 * keeps an existing file's mode, and gives its journal the same). The copy is one read
 * transaction: in WAL mode a reader blocks no writer, and a writer's commit during it is not in
 * the copy (nor half in it). The copy then leaves WAL mode, so it is one file with no -wal or
 * -shm beside it; a `baton` that opens it to restore puts WAL back.
 */
export async function backupSqliteFile(source: string, copy: string): Promise<void> {
  const db = new Database(source, { fileMustExist: true, nativeBinding: addonPath() });
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    await db.backup(copy, { progress: () => ALL_PAGES });
  } finally {
    db.close();
  }
  const written = new Database(copy, { fileMustExist: true, nativeBinding: addonPath() });
  try {
    written.pragma('journal_mode = DELETE');
  } finally {
    written.close();
  }
}

/** PRAGMA quick_check on the file opened read-only: `['ok']` when sound, else SQLite's findings. */
export function quickCheckSqliteFile(path: string): string[] {
  const db = new Database(path, { readonly: true, fileMustExist: true, nativeBinding: addonPath() });
  try {
    return (db.pragma('quick_check') as { quick_check: string }[]).map((row) => row.quick_check);
  } finally {
    db.close();
  }
}
