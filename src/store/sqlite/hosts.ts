/** Hosts and their live capacity on SQLite. */
import type { ContainmentKind } from '../../core/containment.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { DispatchStore, Host } from '../dispatch-store.js';
import { appendAudit } from './rows.js';
import type { SqliteRunner, Sync } from './runner.js';
import { sessionRow } from './tasks-claims.js';

interface HostRow {
  name: string;
  enabled: number;
  session_id: number | null;
  ram_total_mb: number;
  ram_reserved_mb: number;
  ram_free_mb: number;
  slots_max: number;
  heartbeat_at: number;
  registered_at: number;
  containment: ContainmentKind | null;
  containment_ref: string | null;
  jobs_active: number;
  ram_promised_mb: number;
  ram_pending_mb: number;
}

/**
 * A host with its load. Every subquery names the partial index's predicate (`status IN
 * ('claimed', 'running')`) beside `j.host = h.name`, so each reads only that host's active jobs
 * through jobs_active_by_host; a predicate that does not imply the index's (the pending RAM's
 * alone) made SQLite scan the whole jobs table, finished history included, once per host.
 */
const HOST_SELECT = `
  SELECT h.*,
    (SELECT count(*) FROM jobs j WHERE j.host = h.name AND j.status IN ('claimed', 'running')) AS jobs_active,
    (SELECT coalesce(sum(j.ram_mb), 0) FROM jobs j
      WHERE j.host = h.name AND j.status IN ('claimed', 'running')) AS ram_promised_mb,
    (SELECT coalesce(sum(j.ram_mb), 0) FROM jobs j
      WHERE j.host = h.name AND j.status IN ('claimed', 'running')
        AND (j.status = 'claimed' OR j.started_at > h.heartbeat_at)
    ) AS ram_pending_mb
  FROM hosts h`;

/** Every host with its load. */
export const HOST_LIST = `${HOST_SELECT} ORDER BY h.name`;

function toHost(r: HostRow): Host {
  return {
    name: r.name,
    enabled: r.enabled === 1,
    session: r.session_id,
    ramTotalMb: r.ram_total_mb,
    ramReservedMb: r.ram_reserved_mb,
    ramFreeMb: r.ram_free_mb,
    slotsMax: r.slots_max,
    heartbeatAt: r.heartbeat_at,
    registeredAt: r.registered_at,
    containment: r.containment,
    containmentRef: r.containment_ref,
    jobsActive: r.jobs_active,
    ramPromisedMb: r.ram_promised_mb,
    ramPendingMb: r.ram_pending_mb,
  };
}

export function sqliteHosts(run: SqliteRunner): Sync<DispatchStore['hosts']> {
  const get = (name: string): Host | null => {
    const row = run.prepare(`${HOST_SELECT} WHERE h.name = ?`).get(name) as HostRow | undefined;
    return row === undefined ? null : toHost(row);
  };
  return {
    register: (p) =>
      run.write(() => {
        sessionRow(run, p.session, true);
        const now = run.now();
        const current = run
          .prepare(
            `SELECT h.session_id FROM hosts h JOIN sessions s ON s.id = h.session_id
             WHERE h.name = ? AND s.state = 'live' AND h.session_id <> ?`,
          )
          .get(p.name, p.session) as { session_id: number } | undefined;
        if (current !== undefined) {
          throw new ConflictError(
            `host ${p.name} is served by live session ${current.session_id}`,
            'give this runner another name with --host, or stop the other one',
          );
        }
        run
          .prepare(
            `INSERT INTO hosts (name, enabled, session_id, ram_total_mb, ram_reserved_mb, ram_free_mb,
               slots_max, heartbeat_at, registered_at)
             VALUES (@name, coalesce(@enabled, 1), @session, @total, @reserved, @free, @slots, @now, @now)
             ON CONFLICT (name) DO UPDATE SET enabled = coalesce(@enabled, hosts.enabled),
               session_id = excluded.session_id,
               ram_total_mb = excluded.ram_total_mb, ram_reserved_mb = excluded.ram_reserved_mb,
               ram_free_mb = excluded.ram_free_mb, slots_max = excluded.slots_max,
               heartbeat_at = excluded.heartbeat_at`,
          )
          .run({
            name: p.name,
            enabled: p.enabled === undefined ? null : p.enabled ? 1 : 0,
            session: p.session,
            total: p.ramTotalMb,
            reserved: p.ramReservedMb,
            free: p.ramFreeMb,
            slots: p.slotsMax,
            now,
          });
        const host = get(p.name) as Host;
        appendAudit(run, {
          at: now,
          type: 'host:registered',
          session: p.session,
          detail: { host: p.name, enabled: host.enabled, ramTotalMb: p.ramTotalMb, slotsMax: p.slotsMax },
        });
        return host;
      }),
    heartbeat: (p) =>
      run.write(() => {
        const now = run.now();
        const changed = run
          .prepare(
            `UPDATE hosts SET ram_free_mb = ?, heartbeat_at = ?
             WHERE name = ? AND session_id = ?
               AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'live')`,
          )
          .run(p.ramFreeMb, now, p.name, p.session, p.session).changes;
        if (changed === 0) return false;
        run.prepare('UPDATE sessions SET heartbeat_at = ? WHERE id = ?').run(now, p.session);
        return true;
      }),
    setEnabled: (p) =>
      run.write(() => {
        const changed = run
          .prepare('UPDATE hosts SET enabled = ? WHERE name = ?')
          .run(p.enabled ? 1 : 0, p.name).changes;
        if (changed === 0) throw new NotFoundError('host', p.name, 'list hosts with `baton hosts`');
        appendAudit(run, {
          at: run.now(),
          type: p.enabled ? 'host:enabled' : 'host:disabled',
          session: p.by ?? null,
          detail: { host: p.name },
        });
        return get(p.name) as Host;
      }),
    list: () => run.read(() => (run.prepare(HOST_LIST).all() as HostRow[]).map(toHost)),
    setContainment: (p) =>
      run.write(
        () =>
          run
            .prepare(
              `UPDATE hosts SET containment = ?, containment_ref = ?
               WHERE name = ? AND session_id = ?
                 AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'live')`,
            )
            .run(p.containment, p.containmentRef, p.name, p.session, p.session).changes === 1,
      ),
  };
}
