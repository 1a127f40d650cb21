/**
 * The PostgreSQL side of `baton db copy`: whether the database is empty, and the copy itself, in one
 * transaction. Each row goes in as the source stored it, converted by the target column's type
 * (SQLite's integer milliseconds to timestamptz, 0/1 to boolean, JSON text cast to jsonb, blobs to bytea),
 * ids kept; the identity sequences then continue past the source's highest ids, and the ledger's
 * `ledger:continued` row is appended last. Any error rolls everything back.
 */
import { COPIED_TABLES, TABLES_LEFT } from '../copy-plan.js';
import type { CopyResult, CopySource, TargetState } from '../db-copy.js';
import type { PassfileClient } from './pgpass.js';
import { connectClient } from './executor.js';

/** The most bytes of row data one INSERT carries (output chunks hold up to 64 KiB each). */
const BATCH_BYTES = 4 * 1024 * 1024;
/** The most rows one INSERT carries. */
const BATCH_ROWS = 500;

type Column = { readonly name: string; readonly type: string };

/** A database that does not exist is exit 4, a refused login 5, as the store's open says them. */
const connect = (url: string): Promise<PassfileClient> => connectClient(url, 'baton db copy');

export async function readTargetState(url: string): Promise<TargetState> {
  const client = await connect(url);
  try {
    return await targetState(client);
  } finally {
    await client.end();
  }
}

async function targetState(client: PassfileClient): Promise<TargetState> {
  const tables = (
    await client.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1',
    )
  ).rows.map((row) => row.name);
  const batonTables = tables.includes('schema_migrations') && tables.includes('tasks');
  const ours = new Set<string>([...COPIED_TABLES.map((copied) => copied.table), ...Object.keys(TABLES_LEFT)]);
  const otherTables = batonTables ? [] : tables.filter((table) => !ours.has(table));
  const nonEmpty: Record<string, number> = {};
  if (batonTables) {
    // Only the tables there are: an older Baton's `baton init` made fewer (the copy migrates it first).
    const present = new Set(tables);
    const counted = [...COPIED_TABLES.map((copied) => copied.table), 'audit_checkpoints'];
    for (const table of counted.filter((name) => present.has(name))) {
      const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
      const count = Number(rows[0]?.n ?? 0);
      if (count > 0) nonEmpty[table] = count;
    }
  }
  // PostgreSQL 15 grants CREATE on schema public to its owner only: a role that does not own it
  // passes every check above and fails at its first CREATE TABLE (the ops walk, with exit 5).
  const [privilege] = (
    await client.query<{ role: string; schema: string; can_create: boolean }>(
      `SELECT current_user AS role, current_schema() AS schema,
         has_schema_privilege(current_schema(), 'CREATE') AS can_create`,
    )
  ).rows;
  return {
    batonTables,
    otherTables,
    nonEmpty,
    role: privilege?.role ?? '?',
    schema: privilege?.schema ?? 'public',
    canCreate: privilege?.can_create === true,
  };
}

export async function copyIntoPostgres(
  url: string,
  source: CopySource,
  link: Readonly<Record<string, unknown>>,
): Promise<CopyResult> {
  const client = await connect(url);
  try {
    await client.query('BEGIN');
    const names = COPIED_TABLES.map((copied) => copied.table);
    // No other writer between the check below and the commit; readers go on.
    await client.query(`LOCK TABLE ${names.join(', ')}, audit_checkpoints IN EXCLUSIVE MODE`);
    const state = await targetState(client);
    if (Object.keys(state.nonEmpty).length > 0) {
      throw new Error(`the target gained rows meanwhile (${Object.keys(state.nonEmpty).join(', ')})`);
    }
    const columns = await columnsOf(client);
    const tables: Record<string, number> = {};
    for (const { table } of COPIED_TABLES) {
      // The outbox triggers wrote rows for the github: tasks and jobs inserted above; the source's own
      // outbox (applied or not) replaces them.
      if (table === 'github_outbox') await client.query('DELETE FROM github_outbox');
      tables[table] = await copyTable(client, table, columns.get(table) ?? [], source.pages(table));
    }
    for (const { table, identity } of COPIED_TABLES) {
      const last = identity === null ? 0 : source.maxId(table);
      if (identity === null || last < 1) continue;
      await client.query(`SELECT setval(pg_get_serial_sequence($1, $2), $3::bigint)`, [
        table,
        identity,
        last,
      ]);
    }
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO audit_events (at, type, detail)
       VALUES (date_trunc('milliseconds', statement_timestamp()), 'ledger:continued', $1::jsonb) RETURNING id`,
      [JSON.stringify(link)],
    );
    await client.query('COMMIT');
    return { tables, linkId: Number(rows[0]?.id ?? 0) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

async function columnsOf(client: PassfileClient): Promise<Map<string, Column[]>> {
  const { rows } = await client.query<{ tbl: string; name: string; type: string }>(
    `SELECT c.relname AS tbl, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
        AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
  );
  const out = new Map<string, Column[]>();
  for (const row of rows) out.set(row.tbl, [...(out.get(row.tbl) ?? []), { name: row.name, type: row.type }]);
  return out;
}

/** Inserts a table's pages in batches; returns the rows written. */
async function copyTable(
  client: PassfileClient,
  table: string,
  target: readonly Column[],
  pages: Iterable<Record<string, unknown>[]>,
): Promise<number> {
  let written = 0;
  let batch: Record<string, unknown>[] = [];
  let bytes = 0;
  let columns: Column[] | null = null;
  for (const page of pages) {
    for (const row of page) {
      columns ??= sharedColumns(table, target, row);
      const converted = convertRow(row, columns);
      batch.push(converted);
      bytes += approximateBytes(converted);
      if (batch.length >= BATCH_ROWS || bytes >= BATCH_BYTES) {
        written += await insertBatch(client, table, columns, batch);
        batch = [];
        bytes = 0;
      }
    }
  }
  if (columns !== null && batch.length > 0) written += await insertBatch(client, table, columns, batch);
  return written;
}

/**
 * The source's columns, each with its target type. A source column the target lacks would be lost:
 * refused. A target column the source lacks (jobs.github) takes its default or its trigger's value.
 */
function sharedColumns(table: string, target: readonly Column[], row: Record<string, unknown>): Column[] {
  const byName = new Map(target.map((column) => [column.name, column]));
  return Object.keys(row).map((name) => {
    const column = byName.get(name);
    if (column === undefined)
      throw new Error(`${table}.${name} has no column on PostgreSQL: its values would be lost`);
    return column;
  });
}

function convertRow(row: Record<string, unknown>, columns: readonly Column[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of columns) out[column.name] = convertValue(row[column.name], column.type);
  return out;
}

/** Largest time a JavaScript Date holds; a stored time past it means "never" (PostgreSQL's infinity). */
const DATE_LIMIT_MS = 8.64e15;

function convertValue(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'timestamp with time zone') {
    const ms = Number(value);
    if (ms >= DATE_LIMIT_MS) return 'infinity';
    if (ms <= -DATE_LIMIT_MS) return '-infinity';
    return new Date(ms).toISOString();
  }
  if (type === 'boolean') return value === 1 || value === true;
  // JSON text stays text, cast by PostgreSQL (insertBatch): a JS re-parse would turn a JSON `null` into
  // SQL NULL (jsonb_to_recordset reads it so) and round numbers past 2^53.
  if (type === 'jsonb') return typeof value === 'string' ? value : JSON.stringify(value);
  if (type === 'bytea') return `\\x${Buffer.from(value as Uint8Array).toString('hex')}`;
  return value;
}

function approximateBytes(row: Record<string, unknown>): number {
  let bytes = 0;
  for (const value of Object.values(row)) bytes += typeof value === 'string' ? value.length : 16;
  return bytes;
}

async function insertBatch(
  client: PassfileClient,
  table: string,
  columns: readonly Column[],
  rows: readonly Record<string, unknown>[],
): Promise<number> {
  const names = columns.map((column) => `"${column.name}"`).join(', ');
  const values = columns
    .map((column) => (column.type === 'jsonb' ? `r."${column.name}"::jsonb` : `r."${column.name}"`))
    .join(', ');
  const shape = columns
    .map((column) => `"${column.name}" ${column.type === 'jsonb' ? 'text' : column.type}`)
    .join(', ');
  const result = await client.query(
    `INSERT INTO ${table} (${names}) SELECT ${values} FROM jsonb_to_recordset($1::jsonb) AS r(${shape})`,
    [JSON.stringify(rows)],
  );
  return result.rowCount ?? rows.length;
}
