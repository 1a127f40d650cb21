/**
 * The mark `baton db copy` leaves in a SQLite file it has moved to PostgreSQL (decision 0049, review
 * fixes): one `settings` row, written in the same SQLite transaction that held the file's write lock
 * through the copy and committed after PostgreSQL's commit. A file so marked is evidence only: every
 * open that could write it (`baton up`, `baton serve`, `task add`, `db migrate`, …) refuses, so no
 * second runner leads the old backlog and runs its queued jobs again; the read-through opens (`scan`:
 * `audit export`, `audit verify`, `db backup`'s check) still read it.
 *
 * The open's check cannot stop a process that opened the file before the copy (a `baton serve`
 * holds no session, so the copy's quiescence checks do not see it): its next write would land in
 * the old file, acknowledged and never read again. So the mark comes with a trigger per table and
 * statement kind that aborts every insert, update and delete (`fenceMovedFile`), in the same
 * transaction: the database itself refuses that write, whoever's connection makes it, and the
 * executor names the abort as the open does (`movedWriteRefusal`).
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

/** The start of the triggers' abort message; the mark follows it. */
const MOVED_ABORT = 'baton: moved by baton db copy: ';

/**
 * Makes every table of the file refuse inserts, updates and deletes with the mark in the message;
 * run inside the transaction that writes the mark. A file is marked once (a moved file is never
 * copied again), so the triggers' names never meet ones already there.
 */
export function fenceMovedFile(db: Database.Database, mark: string): void {
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .pluck()
    .all() as string[];
  const message = `${MOVED_ABORT}${mark}`.replaceAll("'", "''");
  for (const table of tables) {
    for (const kind of ['insert', 'update', 'delete']) {
      db.exec(
        `CREATE TRIGGER "baton_moved_${kind}_${table}" BEFORE ${kind.toUpperCase()} ON "${table}" ` +
          `BEGIN SELECT RAISE(ABORT, '${message}'); END`,
      );
    }
  }
}

/** A write a moved file's trigger aborted, named as the open names the file; null for any other error. */
export function movedWriteRefusal(path: string, error: Error): ConflictError | null {
  const code = (error as { code?: unknown }).code;
  if (code !== 'SQLITE_CONSTRAINT_TRIGGER' || !error.message.startsWith(MOVED_ABORT)) return null;
  const refusal = movedRefusal(path, error.message.slice(MOVED_ABORT.length));
  refusal.cause = error;
  return refusal;
}

export function movedRefusal(path: string, mark: string): ConflictError {
  return new ConflictError(
    `${path} was moved by baton db copy (${mark}): it is kept as the old ledger's evidence and must not be ` +
      'used again (baton up or baton serve on it would run its jobs a second time)',
    'use the new database: --db <postgres url> or BATON_DB=<postgres url>, its password in PGPASSWORD or ' +
      '~/.pgpass, never in the URL; ' +
      'baton audit export, baton audit verify and baton db backup still read this file',
  );
}
