/** Leases and the audit ledger on SQLite. */
import type { LeaseResult } from '../../core/lease.js';
import type { Store } from '../store.js';
import { appendAudit, toAudit, toLease, type AuditRow, type LeaseRow } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';

export function sqliteLeases(exec: SqliteExecutor): Sync<Store['leases']> {
  const get = (name: string): LeaseRow | undefined =>
    exec.prepare('SELECT * FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
  return {
    acquire: (params) =>
      exec.write((): LeaseResult => {
        const now = exec.now();
        const row = get(params.name);
        if (row !== undefined && row.holder !== null && row.expires_at > now) {
          return row.holder === params.holder
            ? { ok: true, lease: toLease(row) }
            : { ok: false, reason: 'held', lease: toLease(row) };
        }
        const taken = exec
          .prepare(
            `INSERT INTO leases (name, holder, term, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?)
               ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, term = leases.term + 1,
                 acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
               WHERE leases.holder IS NULL OR leases.expires_at <= excluded.acquired_at
               RETURNING *`,
          )
          .get(params.name, params.holder, now, now + params.ttlMs) as LeaseRow;
        appendAudit(exec, {
          at: now,
          type: 'lease:acquired',
          epoch: taken.term,
          detail: { name: params.name, holder: params.holder, ttlMs: params.ttlMs },
        });
        return { ok: true, lease: toLease(taken) };
      }),
    renew: (params) =>
      exec.write((): LeaseResult => {
        const now = exec.now();
        const row = exec
          .prepare(
            `UPDATE leases SET expires_at = ?
               WHERE name = ? AND holder = ? AND term = ? AND expires_at > ? RETURNING *`,
          )
          .get(now + params.ttlMs, params.name, params.holder, params.term, now) as LeaseRow | undefined;
        if (row !== undefined) return { ok: true, lease: toLease(row) };
        const current = get(params.name);
        return { ok: false, reason: 'lost', lease: current === undefined ? null : toLease(current) };
      }),
    resign: (params) =>
      exec.write(() => {
        const now = exec.now();
        const changed = exec
          .prepare(
            `UPDATE leases SET holder = NULL, expires_at = ?
               WHERE name = ? AND holder = ? AND term = ? AND expires_at > ?`,
          )
          .run(now, params.name, params.holder, params.term, now).changes;
        if (changed === 1) {
          appendAudit(exec, {
            at: now,
            type: 'lease:resigned',
            epoch: params.term,
            detail: { name: params.name, holder: params.holder },
          });
        }
        return changed === 1;
      }),
    get: (name) =>
      exec.read(() => {
        const row = get(name);
        return row === undefined ? null : toLease(row);
      }),
  };
}

export function sqliteAudit(exec: SqliteExecutor): Sync<Store['audit']> {
  return {
    list: (params = {}) =>
      exec.read(() =>
        (
          exec
            .prepare(
              `SELECT * FROM audit_events WHERE ${auditWhere(params)}
                 ORDER BY id ${params.newestFirst === true ? 'DESC' : ''} LIMIT @limit`,
            )
            .all({
              ...(params.key === undefined ? {} : { key: params.key }),
              ...(params.session === undefined ? {} : { session: params.session }),
              ...(params.jobId === undefined ? {} : { job: params.jobId }),
              ...(params.type === undefined ? {} : { type: params.type }),
              ...(params.host === undefined ? {} : { host: params.host }),
              ...(params.token === undefined ? {} : { token: params.token }),
              ...(params.beforeId === undefined ? {} : { before: params.beforeId }),
              ...(params.throughId === undefined ? {} : { through: params.throughId }),
              after: params.afterId ?? 0,
              limit: params.limit ?? 1000,
            }) as AuditRow[]
        ).map(toAudit),
      ),
    // One writer at a time, and AUTOINCREMENT: ids commit in order, so every committed one is settled.
    settled: () =>
      exec.read(
        () => (exec.prepare('SELECT max(id) AS id FROM audit_events').get() as { id: number | null }).id ?? 0,
      ),
  };
}

/**
 * The filters given, and only those, so that SQLite can use an index: with `(@key IS NULL OR
 * task_key = @key)` it walks the whole ledger. A job's rows all carry its task key, so a job
 * filter goes through audit_by_key as well.
 */
function auditWhere(params: Parameters<Store['audit']['list']>[0] = {}): string {
  const where = ['id > @after'];
  if (params.key !== undefined) where.push('task_key = @key');
  if (params.session !== undefined) where.push('session_id = @session');
  if (params.jobId !== undefined) {
    // A job retention removed (decision 0039) has no row to name its key: its first ledger row
    // does, found near the ledger's start where old jobs are; read only for an id retention may
    // have removed, so an unknown id never walks the ledger.
    where.push(
      `task_key = coalesce((SELECT t.key FROM jobs j JOIN tasks t ON t.id = j.task_id WHERE j.id = @job),
        (SELECT task_key FROM audit_events WHERE job_id = @job AND task_key IS NOT NULL
           AND @job <= (SELECT coalesce(max(max_id), 0) FROM job_retention) ORDER BY id LIMIT 1))`,
    );
    where.push('job_id = @job');
  }
  if (params.type !== undefined) where.push('type = @type');
  if (params.host !== undefined) where.push('host = @host');
  if (params.token !== undefined) where.push('token_id = @token');
  if (params.beforeId !== undefined) where.push('id < @before');
  if (params.throughId !== undefined) where.push('id <= @through');
  return where.join(' AND ');
}
