/**
 * The mark `baton db copy` leaves in a SQLite file it has moved to PostgreSQL (decision 0049, review
 * fixes): one `settings` row, written in the same SQLite transaction that held the file's write lock
 * through the copy and committed after PostgreSQL's commit. A file so marked is evidence only: every
 * open that could write it (`baton up`, `baton serve`, `task add`, `db migrate`, …) refuses, so no
 * second runner leads the old backlog and runs its queued jobs again; the read-through opens (`scan`:
 * `audit export`, `audit verify`, `db backup`'s check) still read it.
 */
import type Database from 'better-sqlite3';
import { ConflictError } from '../../core/errors.js';

/** The settings row's name (the `baton:` prefix keeps it apart from the operator's settings). */
export const MOVED_SETTING = 'baton:moved-to';

/** The mark's value, or null when the file was not moved (or predates the settings table). */
export function movedMark(db: Database.Database): string | null {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'").get();
  if (table === undefined) return null;
  const value = db.prepare('SELECT value FROM settings WHERE name = ?').pluck().get(MOVED_SETTING);
  return typeof value === 'string' ? value : null;
}

export function movedRefusal(path: string, mark: string): ConflictError {
  return new ConflictError(
    `${path} was moved by baton db copy (${mark}): it is kept as the old ledger's evidence and must not be ` +
      'used again (baton up or baton serve on it would run its jobs a second time)',
    'use the new database: --db <postgres url> or BATON_DB=<postgres url> (with its password); ' +
      'baton audit export, baton audit verify and baton db backup still read this file',
  );
}
