/**
 * How `baton up` and `baton status` name the database they opened: a SQLite file by its absolute
 * path, a PostgreSQL database by its URL without the password. An operator in a subdirectory of
 * the project, or with BATON_DB set in another shell, sees at once which database it is.
 */
import { resolve } from 'node:path';
import { withoutPassword } from '../core/redact.js';
import { parseDbUrl } from '../store/open.js';

export function databaseName(url: string): string {
  const target = parseDbUrl(url);
  return target.engine === 'sqlite'
    ? `${resolve(target.path)} (SQLite)`
    : `${withoutPassword(target.url)} (PostgreSQL)`;
}
