/** Leases and the audit ledger on SQLite. */
import type { LeaseResult } from '../../core/lease.js';
import type { Store } from '../store.js';
import { appendAudit, toAudit, toLease, type AuditRow, type LeaseRow } from './rows.js';
import type { SqliteRunner } from './runner.js';

export function sqliteLeases(run: SqliteRunner): Store['leases'] {
  const get = (name: string): LeaseRow | undefined =>
    run.prepare('SELECT * FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
  return {
    acquire: (p) =>
      Promise.resolve(
        run.write((): LeaseResult => {
          const now = run.now();
          const row = get(p.name);
          if (row !== undefined && row.holder !== null && row.expires_at > now) {
            return row.holder === p.holder
              ? { ok: true, lease: toLease(row) }
              : { ok: false, reason: 'held', lease: toLease(row) };
          }
          const taken = run
            .prepare(
              `INSERT INTO leases (name, holder, term, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?)
               ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, term = leases.term + 1,
                 acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
               WHERE leases.holder IS NULL OR leases.expires_at <= excluded.acquired_at
               RETURNING *`,
            )
            .get(p.name, p.holder, now, now + p.ttlMs) as LeaseRow;
          appendAudit(run, {
            at: now,
            type: 'lease:acquired',
            epoch: taken.term,
            detail: { name: p.name, holder: p.holder, ttlMs: p.ttlMs },
          });
          return { ok: true, lease: toLease(taken) };
        }),
      ),
    renew: (p) =>
      Promise.resolve(
        run.write((): LeaseResult => {
          const now = run.now();
          const row = run
            .prepare(
              `UPDATE leases SET expires_at = ?
               WHERE name = ? AND holder = ? AND term = ? AND expires_at > ? RETURNING *`,
            )
            .get(now + p.ttlMs, p.name, p.holder, p.term, now) as LeaseRow | undefined;
          if (row !== undefined) return { ok: true, lease: toLease(row) };
          const current = get(p.name);
          return { ok: false, reason: 'lost', lease: current === undefined ? null : toLease(current) };
        }),
      ),
    resign: (p) =>
      Promise.resolve(
        run.write(() => {
          const now = run.now();
          const changed = run
            .prepare(
              `UPDATE leases SET holder = NULL, expires_at = ?
               WHERE name = ? AND holder = ? AND term = ? AND expires_at > ?`,
            )
            .run(now, p.name, p.holder, p.term, now).changes;
          if (changed === 1) {
            appendAudit(run, {
              at: now,
              type: 'lease:resigned',
              epoch: p.term,
              detail: { name: p.name, holder: p.holder },
            });
          }
          return changed === 1;
        }),
      ),
    get: (name) =>
      Promise.resolve(
        run.read(() => {
          const row = get(name);
          return row === undefined ? null : toLease(row);
        }),
      ),
  };
}

export function sqliteAudit(run: SqliteRunner): Store['audit'] {
  return {
    list: (p = {}) =>
      Promise.resolve(
        run.read(() =>
          (
            run
              .prepare(
                `SELECT * FROM audit_events
                 WHERE (@key IS NULL OR task_key = @key) AND (@session IS NULL OR session_id = @session)
                   AND (@job IS NULL OR job_id = @job) AND (@type IS NULL OR type = @type)
                   AND id > @after
                 ORDER BY id LIMIT @limit`,
              )
              .all({
                key: p.key ?? null,
                session: p.session ?? null,
                job: p.jobId ?? null,
                type: p.type ?? null,
                after: p.afterId ?? 0,
                limit: p.limit ?? 1000,
              }) as AuditRow[]
          ).map(toAudit),
        ),
      ),
  };
}
