/**
 * Database administration the CLI offers (`baton db migrate`, `baton db roles`), reached through
 * here so adapters never import an engine; each engine module loads lazily, as in open.ts.
 */
import type { LedgerPowers } from '../core/doctor-fleet.js';
import { InvalidInputError } from '../core/errors.js';
import { openStore, parseDbUrl } from './open.js';

/**
 * Applies every missing migration (opening the store does) and closes it again; returns the
 * schema version. `migrate` refuses a missing SQLite file, `create` (`baton init`) makes it.
 */
export async function migrateDatabase(url: string, intent: 'create' | 'migrate'): Promise<number> {
  const store = await openStore(url, { intent });
  try {
    return (await store.schema()).applied;
  } finally {
    await store.close();
  }
}

/**
 * The owner and runtime roles on PostgreSQL (postgres/roles.ts); returns the statements, run
 * unless `apply` is false. SQLite has no roles: whoever can open the file can do anything.
 */
export async function setUpRoles(
  url: string,
  roles: { readonly owner: string; readonly runtime: string },
  apply: boolean,
): Promise<string[]> {
  if (parseDbUrl(url).engine !== 'postgres') {
    throw new InvalidInputError(
      'roles exist on PostgreSQL only: on SQLite whoever can open the file can do anything',
      'protect the file instead (Baton keeps it 0600 in a 0700 directory); see docs/security.md',
    );
  }
  const { applyRoles, validateRoleName } = await import('./postgres/roles.js');
  const params = {
    owner: validateRoleName('owner', roles.owner),
    runtime: validateRoleName('runtime', roles.runtime),
  };
  if (params.owner === params.runtime) throw new InvalidInputError('the owner and runtime roles must differ');
  return applyRoles(url, params, apply);
}

/**
 * What the role in a PostgreSQL URL may do to the ledger beyond appending (`baton doctor`):
 * whether it is a superuser, owns audit_events, or holds UPDATE, DELETE or TRUNCATE on it. Null
 * on SQLite, which has no roles. Reads the catalog only.
 */
export async function ledgerPowers(url: string): Promise<LedgerPowers | null> {
  if (parseDbUrl(url).engine !== 'postgres') return null;
  const { readLedgerPowers } = await import('./postgres/roles.js');
  return readLedgerPowers(url);
}
