/** The PostgreSQL side of the `baton db copy` tests: raw reads of the target, and what it holds. */
import pg from 'pg';

type Obj = Record<string, unknown>;

/** One statement on its own connection to `url`. */
export async function pgRows(url: string, text: string, params: unknown[] = []): Promise<Obj[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as Obj[];
  } finally {
    await client.end();
  }
}

/** What the target holds: no tables at all, or its rows in the tables a copy writes. */
export async function targetRows(url: string): Promise<Obj> {
  const [tables] = await pgRows(url, `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
  if (tables?.['n'] === 0) return { tables: 0 };
  const [row] = await pgRows(
    url,
    `SELECT (SELECT count(*) FROM tasks)::int AS tasks, (SELECT count(*) FROM jobs)::int AS jobs,
            (SELECT count(*) FROM sessions)::int AS sessions, (SELECT count(*) FROM audit_events)::int AS audit,
            (SELECT count(*) FROM effects)::int AS effects, (SELECT count(*) FROM ledger_keys)::int AS keys,
            (SELECT count(*) FROM github_outbox)::int AS outbox`,
  );
  return row ?? {};
}
