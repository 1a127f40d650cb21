/**
 * Chooses the engine from the database URL: `postgres://` or `postgresql://` for PostgreSQL,
 * `sqlite:<path>`, `file:<path>` or a plain path for SQLite. Engines load lazily so a CLI call
 * pays only for the one it uses.
 */
import { isAbsolute, resolve } from 'node:path';
import { InvalidInputError, type OpenIntent } from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';
import { POSTGRES_URL } from './db-url.js';
import type { Store } from './store.js';
import { applySwitches, testSwitches, type OpenOptions } from './test-switches.js';

export const DEFAULT_DB = '.baton/baton.db';

export type DbTarget =
  | { readonly engine: 'sqlite'; readonly path: string }
  | { readonly engine: 'postgres'; readonly url: string };

export function parseDbUrl(raw: string): DbTarget {
  const url = raw.trim();
  if (url.length === 0) {
    throw new InvalidInputError(
      'the database URL is empty',
      `pass a path such as ${DEFAULT_DB} or a postgres:// URL`,
    );
  }
  if (POSTGRES_URL.test(url)) return { engine: 'postgres', url };
  const sqlite = /^(sqlite|file):(\/\/)?(.*)$/i.exec(url);
  if (sqlite !== null) {
    const path = sqlite[3] ?? '';
    if (path.length === 0)
      throw new InvalidInputError(`no file path in ${redactSecrets(url)}`, 'write sqlite:/path/to/baton.db');
    return { engine: 'sqlite', path };
  }
  // Anything else that starts like a URL is a mistake, not a file name: `postgres:/db` or
  // `mysql://x` as a path would make directories named after it and an empty database.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url);
  if (scheme !== null) {
    const name = scheme[1] ?? '';
    const hint = /^postgres(ql)?$/i.test(name)
      ? 'a PostgreSQL URL starts with postgres:// (two slashes), e.g. postgres://user@host/db'
      : 'use a postgres:// URL, or a sqlite: URL or file path (./name:with-colon for such a file)';
    throw new InvalidInputError(`unknown database scheme "${name}:" in ${redactSecrets(url)}`, hint);
  }
  return { engine: 'sqlite', path: url };
}

/** `options` carries only the TEST-ONLY switches of test-switches.ts; production passes none. */
/**
 * The same database named so that it means the same from any directory: a relative SQLite path
 * is resolved against `cwd`. Agents run in their own worktrees and must reach the runner's file.
 */
export function absoluteDbUrl(raw: string, cwd: string): string {
  const target = parseDbUrl(raw);
  return target.engine === 'postgres' || isAbsolute(target.path) ? raw : resolve(cwd, target.path);
}

/**
 * `intent` says what the caller may do to the database (core/errors.ts): the CLI passes `use`
 * for every command but `baton up`, `baton init` and `baton db migrate`. Library callers (tests,
 * benchmarks, the demo) get `create`: they make their own databases. `scan`: the caller reads the
 * database through once (`baton audit export`, `audit verify`), so SQLite keeps a small page cache;
 * PostgreSQL's cache is the server's, and nothing changes there.
 */
export async function openStore(
  raw: string,
  options: OpenOptions & {
    readonly intent?: OpenIntent;
    readonly scan?: boolean;
    /** SQLite: open the file read-only (a backup's copy being checked); PostgreSQL has no use for it. */
    readonly readOnly?: boolean;
  } = {},
): Promise<Store> {
  const target = parseDbUrl(raw);
  const switches = testSwitches(options);
  const intent = options.intent ?? 'create';
  if (target.engine === 'sqlite') {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.js');
    const scan = options.scan === true;
    const readOnly = options.readOnly === true;
    return applySwitches(openSqliteStore({ path: target.path, switches, intent, scan, readOnly }), switches);
  }
  const { openPostgresStore } = await import('./postgres/postgres-store.js');
  return applySwitches(await openPostgresStore({ url: target.url, switches, intent }), switches);
}
