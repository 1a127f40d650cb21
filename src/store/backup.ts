/**
 * `baton db backup` reaches the SQLite engine through here, as `baton db roles` reaches
 * PostgreSQL's through roles.ts: adapters never import an engine, and the engine module loads
 * lazily (docs/decisions/0050-an-online-sqlite-backup.md).
 */
import { InvalidInputError } from '../core/errors.js';
import { parseDbUrl } from './open.js';

/**
 * The SQLite file a backup copies; a PostgreSQL URL is refused with the way to back it up
 * (pg_dump reads one consistent snapshot; docs/operations.md).
 */
export function sqliteSource(url: string): string {
  const target = parseDbUrl(url);
  if (target.engine === 'sqlite') return target.path;
  throw new InvalidInputError(
    'baton db backup copies a SQLite database; this database is PostgreSQL',
    'back it up with pg_dump (e.g. pg_dump -Fc -f baton.dump <database>), as docs/operations.md ' +
      '"Back up PostgreSQL while Baton runs" shows',
  );
}

/** Copies the SQLite database at `source` online into `copy`, an empty file the caller made (sqlite/backup.ts). */
export async function backupSqlite(source: string, copy: string): Promise<void> {
  const { backupSqliteFile } = await import('./sqlite/backup.js');
  await backupSqliteFile(source, copy);
}

/** PRAGMA quick_check of a SQLite file opened read-only: `['ok']` when sound. */
export async function quickCheckSqlite(path: string): Promise<string[]> {
  const { quickCheckSqliteFile } = await import('./sqlite/backup.js');
  return quickCheckSqliteFile(path);
}
