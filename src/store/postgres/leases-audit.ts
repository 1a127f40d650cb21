/** Leases and the audit ledger on PostgreSQL. */
import { assert } from '../../core/assert.js';
import type { LeaseResult } from '../../core/lease.js';
import type { Store } from '../store.js';
import { LEASE_COLUMNS, NOW, ms, toAudit, toLease, type AuditRow, type LeaseRow } from './rows.js';
import type { PgExecutor } from './executor.js';
import type { LedgerHorizon } from './ledger-horizon.js';

const TTL = `$3::bigint * interval '1 millisecond'`;
const ACQUIRE_RETRY_MAX = 20;

/**
 * One statement. `cur` locks the lease row FOR UPDATE, which under READ COMMITTED yields its
 * newest version, and only then is the clock read (`n` scans `cur` first), so expiry is judged
 * on the row as it is now and on a time taken after any wait. The row is taken when free or
 * expired (a new term), created when absent; otherwise the locked row is returned to say who
 * holds it, or, for its own holder, that it already holds it (same term, not extended).
 */
const ACQUIRE = `
WITH cur AS (
  SELECT ${LEASE_COLUMNS} FROM leases WHERE name = $1::text FOR UPDATE
), n AS (
  SELECT ${NOW} AS t FROM (SELECT count(*) FROM cur) locked
), taken AS (
  UPDATE leases SET holder = $2::text, term = leases.term + 1, acquired_at = n.t,
    expires_at = n.t + ${TTL}
  FROM cur, n
  WHERE leases.name = cur.name AND (cur.holder IS NULL OR cur.expires_at <= n.t)
  RETURNING leases.name, leases.holder, leases.term, leases.acquired_at, leases.expires_at
), created AS (
  INSERT INTO leases (name, holder, term, acquired_at, expires_at)
  SELECT $1::text, $2::text, 1, n.t, n.t + ${TTL} FROM n
  WHERE NOT EXISTS (SELECT 1 FROM cur)
  ON CONFLICT (name) DO NOTHING
  RETURNING ${LEASE_COLUMNS}
), got AS (
  SELECT * FROM taken UNION ALL SELECT * FROM created
), a AS (
  INSERT INTO audit_events (at, type, epoch, detail)
  SELECT acquired_at, 'lease:acquired', term,
    jsonb_build_object('name', name, 'holder', holder, 'ttlMs', $3::bigint)
  FROM got
)
SELECT true AS taken, got.*, n.t AS now FROM got, n
UNION ALL
SELECT false, cur.*, n.t FROM cur, n WHERE NOT EXISTS (SELECT 1 FROM got)`;

/** `beat` runs renewals, on connections of their own (postgres-store.ts, livenessPool). */
export function postgresLeases(exec: PgExecutor, beat: PgExecutor = exec): Store['leases'] {
  const get = (name: string): Promise<LeaseRow | undefined> =>
    exec.one<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM leases WHERE name = $1::text`, [name]);
  return {
    acquire: async (params): Promise<LeaseResult> => {
      for (let attempt = 1; ; attempt++) {
        const row = await exec.one<LeaseRow & { taken: boolean; now: Date }>(ACQUIRE, [
          params.name,
          params.holder,
          params.ttlMs,
        ]);
        if (row !== undefined) {
          if (row.taken) return { ok: true, lease: toLease(row) };
          // Not taken, so the newest version is held and unexpired (the guard said so).
          const held = row.holder !== null && ms(row.expires_at) > ms(row.now);
          assert(held, 'a lease left untaken is held and unexpired');
          return row.holder === params.holder
            ? { ok: true, lease: toLease(row) }
            : { ok: false, reason: 'held', lease: toLease(row) };
        }
        // Another process created the row after our snapshot: the next run sees it.
        assert(attempt < ACQUIRE_RETRY_MAX, 'a lease acquire does not race forever');
      }
    },
    renew: async (params): Promise<LeaseResult> => {
      const row = await beat.one<LeaseRow>(
        `UPDATE leases SET expires_at = n.t + ${TTL}
         FROM (SELECT ${NOW} AS t) n
         WHERE name = $1::text AND holder = $2::text AND term = $4::bigint AND expires_at > n.t
         RETURNING ${LEASE_COLUMNS}`,
        [params.name, params.holder, params.ttlMs, params.term],
      );
      if (row !== undefined) return { ok: true, lease: toLease(row) };
      const current = await get(params.name);
      return { ok: false, reason: 'lost', lease: current === undefined ? null : toLease(current) };
    },
    resign: async (params) => {
      const [row] = await exec.rows<{ resigned: number }>(
        `WITH r AS (
           UPDATE leases SET holder = NULL, expires_at = n.t
           FROM (SELECT ${NOW} AS t) n
           WHERE name = $1::text AND holder = $2::text AND term = $3::bigint AND expires_at > n.t
           RETURNING leases.term, leases.expires_at
         ), a AS (
           INSERT INTO audit_events (at, type, epoch, detail)
           SELECT expires_at, 'lease:resigned', term,
             jsonb_build_object('name', $1::text, 'holder', $2::text)
           FROM r
         )
         SELECT count(*) AS resigned FROM r`,
        [params.name, params.holder, params.term],
      );
      return row?.resigned === 1;
    },
    get: async (name) => {
      const row = await get(name);
      return row === undefined ? null : toLease(row);
    },
  };
}

export function postgresAudit(exec: PgExecutor, horizon: LedgerHorizon): Store['audit'] {
  return {
    list: async (params = {}) => {
      // Only the filters given, so each combination is its own prepared statement whose plan can
      // use the index for it. A job's rows all carry its task key: a job filter uses audit_by_key.
      const values: unknown[] = [params.afterId ?? 0, params.limit ?? 1000];
      const where = ['id > $1::bigint'];
      const param = (value: unknown, type: string): string => `$${values.push(value)}::${type}`;
      if (params.key !== undefined) where.push(`task_key = ${param(params.key, 'text')}`);
      if (params.session !== undefined) where.push(`session_id = ${param(params.session, 'bigint')}`);
      if (params.jobId !== undefined) {
        const job = param(params.jobId, 'bigint');
        where.push(
          // A job retention removed (decision 0039): its first ledger row names its key, read only
          // then, and only for an id retention may have removed (an unknown id never walks the ledger).
          `task_key = coalesce((SELECT t.key FROM jobs j JOIN tasks t ON t.id = j.task_id WHERE j.id = ${job}),
            (SELECT task_key FROM audit_events WHERE job_id = ${job} AND task_key IS NOT NULL
               AND ${job} <= (SELECT coalesce(max(max_id), 0) FROM job_retention) ORDER BY id LIMIT 1))`,
        );
        where.push(`job_id = ${job}`);
      }
      if (params.type !== undefined) where.push(`type = ${param(params.type, 'text')}`);
      if (params.host !== undefined) where.push(`host = ${param(params.host, 'text')}`);
      if (params.token !== undefined) where.push(`token_id = ${param(params.token, 'text')}`);
      if (params.beforeId !== undefined) where.push(`id < ${param(params.beforeId, 'bigint')}`);
      if (params.throughId !== undefined) where.push(`id <= ${param(params.throughId, 'bigint')}`);
      const rows = await exec.rows<AuditRow>(
        `SELECT id, at, type, task_key, job_id, session_id, host, epoch, detail, token_id FROM audit_events
         WHERE ${where.join(' AND ')}
         ORDER BY id ${params.newestFirst === true ? 'DESC' : ''} LIMIT $2::int`,
        values,
      );
      return rows.map(toAudit);
    },
    settled: () => horizon.settledNow(),
  };
}
