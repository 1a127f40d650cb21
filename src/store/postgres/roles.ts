/**
 * Least privilege on PostgreSQL: an owner role that owns Baton's tables and runs migrations, and
 * a runtime role for `baton up`, the CLI and the API, which may read and write the working tables
 * but may only append to the ledger (audit_events) and the effects log. Only a table's owner (or a
 * superuser) may ALTER it, so the runtime role can neither disable the append-only triggers nor
 * the trigger that keeps a queued job's command fixed; it holds no UPDATE, DELETE or TRUNCATE on
 * the append-only tables, and may not create objects. docs/security.md shows the same SQL.
 */
import type { LedgerPowers } from '../../core/doctor-fleet.js';
import { InvalidInputError } from '../../core/errors.js';
import { connectClient } from './executor.js';

/** Tables the runtime role may read and append to, never change. */
export const APPEND_ONLY_TABLES = ['audit_events', 'effects'] as const;
/** Tables the runtime role may only read. */
export const READ_ONLY_TABLES = ['schema_migrations'] as const;

export interface RolesParams {
  readonly owner: string;
  readonly runtime: string;
}

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function validateRoleName(what: string, name: string): string {
  if (!ROLE_NAME.test(name)) {
    throw new InvalidInputError(
      `${what} role ${JSON.stringify(name)} is not a plain PostgreSQL name`,
      'use lower-case letters, digits and _, such as baton_owner and baton_runtime',
    );
  }
  return name;
}

/** The statements, given the database's tables and functions (as `baton db roles --print` shows). */
export function rolesSql(
  params: RolesParams,
  objects: {
    readonly schema: string;
    readonly tables: readonly string[];
    readonly functions: readonly string[];
  },
  serverVersion: number,
): string[] {
  const owner = ident(params.owner);
  const runtime = ident(params.runtime);
  const schema = ident(objects.schema);
  const qualified = (name: string): string => `${schema}.${ident(name)}`;
  const defaults = `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${schema}`;
  const create = (name: string, attrs: string): string =>
    `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${name}') THEN ` +
    `CREATE ROLE ${ident(name)} ${attrs}; END IF; END $$`;
  const noPower = 'NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS';
  const working = objects.tables.filter(
    (table) =>
      !(APPEND_ONLY_TABLES as readonly string[]).includes(table) &&
      !(READ_ONLY_TABLES as readonly string[]).includes(table),
  );
  return [
    create(params.owner, `LOGIN ${noPower}`),
    create(params.runtime, `LOGIN ${noPower}`),
    `ALTER ROLE ${runtime} ${noPower}`,
    `GRANT CONNECT ON DATABASE ${ident('__DATABASE__')} TO ${owner}, ${runtime}`,
    `GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${owner}`,
    `REVOKE CREATE ON SCHEMA ${schema} FROM PUBLIC, ${runtime}`,
    `GRANT USAGE ON SCHEMA ${schema} TO ${runtime}`,
    ...objects.tables.map((table) => `ALTER TABLE ${qualified(table)} OWNER TO ${owner}`),
    ...objects.functions.map((routine) => `ALTER FUNCTION ${schema}.${routine} OWNER TO ${owner}`),
    ...objects.tables.map((table) => `REVOKE ALL ON ${qualified(table)} FROM ${runtime}`),
    ...working.map((table) => `GRANT SELECT, INSERT, UPDATE, DELETE ON ${qualified(table)} TO ${runtime}`),
    ...APPEND_ONLY_TABLES.filter((table) => objects.tables.includes(table)).map(
      (table) => `GRANT SELECT, INSERT ON ${qualified(table)} TO ${runtime}`,
    ),
    ...READ_ONLY_TABLES.filter((table) => objects.tables.includes(table)).map(
      (table) => `GRANT SELECT ON ${qualified(table)} TO ${runtime}`,
    ),
    `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${runtime}`,
    // The queue's upkeep vacuums jobs; PostgreSQL 17 lets a non-owner do that with MAINTAIN.
    ...(serverVersion >= 170000 ? [`GRANT MAINTAIN ON ${qualified('jobs')} TO ${runtime}`] : []),
    // Tables a later migration adds: working tables by default; an append-only one is revoked
    // by running `baton db roles` again after the upgrade.
    `${defaults} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${runtime}`,
    `${defaults} GRANT USAGE, SELECT ON SEQUENCES TO ${runtime}`,
  ];
}

/** Creates (or updates) the two roles and their privileges on the database `url` names. */
export async function applyRoles(url: string, params: RolesParams, apply: boolean): Promise<string[]> {
  const client = await connectClient(url, 'baton db roles');
  try {
    const [{ schema, db, version } = { schema: 'public', db: '', version: 0 }] = (
      await client.query<{ schema: string; db: string; version: number }>(
        `SELECT current_schema() AS schema, current_database() AS db,
                current_setting('server_version_num')::int AS version`,
      )
    ).rows;
    const tables = (
      await client.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1`,
        [schema],
      )
    ).rows.map((row) => row.name);
    if (!tables.includes('audit_events')) {
      throw new InvalidInputError(
        `no Baton tables in schema ${schema} of database ${db}`,
        'run `baton init` (or `baton db migrate`) on it first',
      );
    }
    const functions = (
      await client.query<{ sig: string }>(
        `SELECT format('%I(%s)', p.proname, pg_get_function_identity_arguments(p.oid)) AS sig
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = $1 AND p.prokind = 'f' ORDER BY 1`,
        [schema],
      )
    ).rows.map((row) => row.sig);
    const statements = rolesSql(params, { schema, tables, functions }, version).map((sql) =>
      sql.replace(ident('__DATABASE__'), ident(db)),
    );
    if (apply) {
      await client.query('BEGIN');
      for (const sql of statements) await client.query(sql);
      await client.query('COMMIT');
    }
    return statements;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    const code = (error as { code?: unknown }).code;
    if (code === '42501' || code === '42710') {
      throw new InvalidInputError(
        `cannot set up the roles: ${(error as Error).message}`,
        "run it with a superuser's URL, or a role that owns Baton's tables and may create roles",
      );
    }
    throw error;
  } finally {
    await client.end();
  }
}

/** The role's power over audit_events, from the catalog (store/roles.ts ledgerPowers). */
export async function readLedgerPowers(url: string): Promise<LedgerPowers> {
  const client = await connectClient(url, 'baton doctor');
  try {
    const { rows } = await client.query<{
      role: string;
      superuser: boolean;
      owner: boolean;
      update: boolean;
      delete: boolean;
      truncate: boolean;
    }>(
      `SELECT current_user AS role, r.rolsuper AS superuser,
              pg_has_role(current_user, c.relowner, 'MEMBER') AS owner,
              has_table_privilege(c.oid, 'UPDATE') AS update, has_table_privilege(c.oid, 'DELETE') AS delete,
              has_table_privilege(c.oid, 'TRUNCATE') AS truncate
       FROM pg_class c, pg_roles r
       WHERE c.oid = to_regclass('audit_events') AND r.rolname = current_user`,
    );
    const [row] = rows;
    if (row === undefined)
      throw new InvalidInputError('no audit_events table here', 'run `baton init` first');
    const privileges = (['update', 'delete', 'truncate'] as const).filter((name) => row[name]);
    return {
      role: row.role,
      superuser: row.superuser,
      owner: row.owner,
      privileges: privileges.map((name) => name.toUpperCase()),
    };
  } finally {
    await client.end();
  }
}
