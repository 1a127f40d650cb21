/**
 * The generic plan PostgreSQL may use for a kept statement after five runs, made for any values:
 * what the plan tests of kept statements check (src/store/postgres/*-plans.test.ts).
 */
import type pg from 'pg';

/** The generic plan of `sql` for `params` (SQL literals, comma-separated; '' for none), as EXPLAIN prints it. */
export async function genericPlan(client: pg.Client, sql: string, params: string): Promise<string> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE generic AS ${sql}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (COSTS OFF) EXECUTE generic${params === '' ? '' : `(${params})`}`,
    );
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE generic').catch(() => undefined);
  }
}
