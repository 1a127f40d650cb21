/**
 * PostgreSQL test databases put back as new once a conformance case is done with them, so the
 * next case takes one instead of creating a copy of the template.
 *
 * Why: `CREATE DATABASE … TEMPLATE` writes the whole copy (8.5 MB, mostly the system catalogs)
 * through the WAL and waits for its flush; on the shared CI machine's PostgreSQL 15 that is 0.6–1 s
 * each and does not overlap (1, 4 and 8 at once took 1.4, 3.3 and 6.2 s), so the suite's some 230
 * cases spent 276 s in it against 114 s in their own bodies. Emptying the tables in one
 * transaction is one small commit. TRUNCATE was measured too and rejected: it makes new files
 * for every table and index, 1.2–1.6 s.
 *
 * "As new" is checked, not assumed: a database goes back only when, after the reset, its
 * fingerprint (every object's definition, owner and rights, every table's rows, every sequence's
 * position, the database's settings) equals that of a copy fresh from the template, and nobody
 * else is connected to it. A case that left anything else behind (a table of its own, a changed
 * migration row, a connection still open) keeps its database, which
 * the test run drops at its end with the rest; the next case gets a new copy.
 */
import pg from 'pg';
import { CLOCK_TABLE } from '../../src/store/test-switches.js';

/** One text that changes with any object, row or setting of the current database that a case can leave behind. */
const FINGERPRINT_SQL = `
WITH ns AS (
  SELECT oid, nspname FROM pg_namespace
  WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg_temp%'
    AND nspname NOT LIKE 'pg_toast_temp%'
), rel AS (SELECT c.* FROM pg_class c JOIN ns ON ns.oid = c.relnamespace),
parts AS (
  SELECT 'ns ' || n.nspname || ' ' || coalesce(n.nspacl::text, '') AS x FROM pg_namespace n JOIN ns ON ns.oid = n.oid
  UNION ALL SELECT format('rel %s %s %s %s %s %s %s', oid::regclass, relkind, relpersistence, relowner,
    relacl, reloptions, relrowsecurity) FROM rel
  UNION ALL SELECT format('col %s %s %s %s %s %s %s', a.attrelid::regclass, a.attname,
    format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated)
    FROM pg_attribute a JOIN rel ON rel.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT format('con %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(c.oid))
    FROM pg_constraint c JOIN ns ON ns.oid = c.connamespace
  UNION ALL SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN rel ON rel.oid = i.indexrelid
  UNION ALL SELECT format('trg %s %s', t.tgenabled, pg_get_triggerdef(t.oid))
    FROM pg_trigger t JOIN rel ON rel.oid = t.tgrelid WHERE NOT t.tgisinternal
  UNION ALL SELECT format('fn %s %s %s %s', p.oid::regprocedure, p.prokind, p.proowner, md5(p.prosrc))
    FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
  UNION ALL SELECT format('view %s %s', oid::regclass, pg_get_viewdef(oid)) FROM rel WHERE relkind IN ('v', 'm')
  UNION ALL SELECT format('type %s %s', t.oid::regtype, t.typtype) FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
  UNION ALL SELECT format('enum %s %s %s', enumtypid::regtype, enumsortorder, enumlabel) FROM pg_enum
  UNION ALL SELECT format('seq %s %s %s %s', s.seqrelid::regclass, s.seqstart, s.seqincrement, q.last_value)
    FROM pg_sequence s JOIN rel ON rel.oid = s.seqrelid
    JOIN pg_sequences q ON q.schemaname = rel.relnamespace::regnamespace::text AND q.sequencename = rel.relname
  UNION ALL SELECT format('rule %s %s', tablename, definition) FROM pg_rules WHERE schemaname <> 'pg_catalog'
  UNION ALL SELECT format('policy %s %s', polrelid::regclass, polname) FROM pg_policy
  UNION ALL SELECT format('ext %s %s', extname, extversion) FROM pg_extension
  UNION ALL SELECT 'evt ' || evtname FROM pg_event_trigger
  UNION ALL SELECT 'lo ' || oid FROM pg_largeobject_metadata
  UNION ALL SELECT format('db %s %s %s %s', datdba, datconnlimit, datallowconn, datacl)
    FROM pg_database WHERE datname = current_database()
  UNION ALL SELECT format('set %s %s', setrole, setconfig) FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL SELECT format('rows %s %s', oid::regclass, query_to_xml(format(
    'SELECT md5(coalesce(string_agg(t::text, E''\\n'' ORDER BY t::text), '''')) AS h FROM %s t', oid::regclass),
    false, true, '')) FROM rel WHERE relkind = 'r'
)
SELECT md5(string_agg(x, E'\\n' ORDER BY x)) AS fingerprint FROM parts`;

/**
 * Drops the shared test clock's table (test-switches.ts) that clock-moving cases make, empties
 * every table but the migrations' record, zeroes stats' marks and retention log's numbers and
 * rewinds every sequence, in one transaction.
 * `session_replication_role = replica` (superuser only) keeps the append-only triggers of the
 * audit tables, the foreign keys and the wake-up NOTIFYs out of it.
 */
const RESET_SQL = `
DO $$
DECLARE r record;
BEGIN
  SET LOCAL session_replication_role = replica;
  SET LOCAL lock_timeout = '2s';
  DROP TABLE IF EXISTS ${CLOCK_TABLE};
  FOR r IN SELECT c.oid::regclass AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind = 'r'
             AND c.relname NOT IN ('schema_migrations', 'stats_marks', 'stats_retention') LOOP
    EXECUTE format('DELETE FROM %s', r.t);
  END LOOP;
  UPDATE stats_marks SET n = 0; -- its rows are the migration's (0037), only their marks move
  UPDATE stats_retention SET quiet = false, seq = 0, dropped = 0; -- its row is 0038's
  PERFORM setval(seqrelid, seqstart, false) FROM pg_sequence;
END $$`;

/** Connections to the current database other than the asker's, and transactions prepared in it. */
const OTHERS_SQL = `
SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid())
     + (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()) AS n`;

/** Runs one statement on the database being recycled and answers its rows. */
type Exec = (sql: string) => Promise<readonly Record<string, unknown>[]>;

const fingerprint = async (exec: Exec): Promise<string> =>
  String((await exec(FINGERPRINT_SQL))[0]?.['fingerprint']);

/** The databases of one server that are as new, and the fingerprint of one fresh from its template. */
export interface RecyclePool {
  readonly free: string[];
  reference?: Promise<string>;
}

async function onDatabase<T>(url: string, body: (exec: Exec) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(async (sql) => (await client.query(sql)).rows as Record<string, unknown>[]);
  } finally {
    await client.end();
  }
}

/**
 * Resets the database at `url` through `exec` (the caller's last connection to it) and puts it in
 * the pool if it is then as new; otherwise leaves it alone (the run drops it). The first call
 * takes the reference fingerprint from a new copy made with `copy`, which then joins the pool.
 * Answers whether `url` went back.
 */
export async function recycle(
  pool: RecyclePool,
  url: string,
  exec: Exec,
  copy: () => Promise<string>,
): Promise<boolean> {
  pool.reference ??= (async () => {
    const fresh = await copy();
    const print = await onDatabase(fresh, fingerprint);
    pool.free.push(fresh);
    return print;
  })();
  const reference = await pool.reference;
  const asNew = await (async () => {
    if (Number((await exec(OTHERS_SQL))[0]?.['n']) !== 0) return false;
    await exec(RESET_SQL);
    return (await fingerprint(exec)) === reference;
  })().catch(() => false);
  if (asNew) pool.free.push(url);
  return asNew;
}
