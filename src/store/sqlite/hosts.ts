/** Hosts and their live capacity on SQLite. */
import type { Fleet } from '../../core/capacity.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { DispatchStore, Host, HostRegisterParams, HostRetire, HostToggle } from '../dispatch-store.js';
import { fleetOfRows, type FleetRow } from '../host-fleet.js';
import type * as shared from '../run-rows.js';
import { hostWithLoadOf } from '../run-rows.js';
import { SQLITE, appendAudit, type SqliteEncoding } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { sessionRow } from './tasks-claims.js';

type HostRow = shared.HostRow<SqliteEncoding>;

/**
 * The load of host `h` from its active jobs `j`, as columns of a query grouped by host: one index
 * lookup per host. The join names the partial index's predicate (`status IN ('claimed',
 * 'running')`) beside `j.host = h.name`, so it reads only that host's active jobs through
 * jobs_active_by_host (covering: migration 0016); a predicate that does not imply the index's
 * made SQLite scan the whole jobs table, finished history included, once per host.
 */
const LOAD = `count(j.host) AS jobs_active, coalesce(sum(j.ram_mb), 0) AS ram_promised_mb,
    coalesce(sum(CASE WHEN j.status = 'claimed' OR j.started_at > h.heartbeat_at THEN j.ram_mb END), 0)
      AS ram_pending_mb`;
const ACTIVE_JOBS = `LEFT JOIN jobs j ON j.host = h.name AND j.status IN ('claimed', 'running')`;

/** Hosts (those `where` keeps) with their load. */
const hostSelect = (where: string): string =>
  `SELECT h.*, ${LOAD} FROM hosts h ${ACTIVE_JOBS} ${where} GROUP BY h.name`;

/** Every host with its load. */
export const HOST_LIST = `${hostSelect('')} ORDER BY h.name`;

/**
 * The fleet as a placement sees it (core/capacity.ts Fleet), as PostgreSQL's HOST_FLEET: the
 * counts, then the enabled hosts with a free slot and their load, in name order; one row at
 * least (null host columns when none is open).
 */
export const HOST_FLEET = `
  WITH f AS (
    SELECT count(*) AS hosts, coalesce(sum(enabled), 0) AS enabled,
      max(CASE WHEN enabled = 1 THEN heartbeat_at END) AS last_beat_at,
      max(CASE WHEN enabled = 1 THEN ram_total_mb - ram_reserved_mb END) AS largest_budget_mb
    FROM hosts
  ), o AS (
    SELECT h.name, h.heartbeat_at, h.ram_total_mb, h.ram_reserved_mb, h.ram_free_mb, h.slots_max,
      h.agent_command, ${LOAD}
    FROM hosts h ${ACTIVE_JOBS}
    WHERE h.enabled = 1 GROUP BY h.name HAVING count(j.host) < h.slots_max
  )
  SELECT f.hosts, f.enabled, f.last_beat_at, f.largest_budget_mb, o.* FROM f LEFT JOIN o ON true ORDER BY o.name`;

/**
 * Whether an enabled host has a live runner that runs jobs without a command of their own: its
 * register said so, or did not say (a host not registered again since migration 0044); decision 0047. Not
 * correlated, so a query naming it runs it once.
 */
export const AGENT_COMMAND_HOST = `EXISTS (SELECT 1 FROM hosts ah JOIN sessions ahs ON ahs.id = ah.session_id
    WHERE ah.enabled = 1 AND ah.agent_command IS NOT 0 AND ahs.state = 'live')`;

function fleet(exec: SqliteExecutor): Fleet {
  return fleetOfRows(exec.prepare(HOST_FLEET).all() as FleetRow<number>[], (instant) => instant);
}

/** Free and total disk space as heartbeat parameters: null when the runner could not tell. */
function diskOf(params: {
  readonly disk?: { freeMb: number; totalMb: number } | null | undefined;
}): (number | null)[] {
  return [params.disk?.freeMb ?? null, params.disk?.totalMb ?? null];
}

const toHost = (row: HostRow): Host => hostWithLoadOf(SQLITE, row);

/** The serving runner's containment, written only while its session is live and serves the host. */
const SET_CONTAINMENT = `UPDATE hosts SET containment = ?, containment_ref = ?
  WHERE name = ? AND session_id = ? AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'live')`;

/** One host with its load; null for an unknown name. */
function hostNamed(exec: SqliteExecutor, name: string): Host | null {
  const row = exec.prepare(hostSelect('WHERE h.name = ?')).get(name) as HostRow | undefined;
  return row === undefined ? null : toHost(row);
}

export function sqliteHosts(exec: SqliteExecutor): Sync<DispatchStore['hosts']> {
  return {
    register: (params) => exec.write(() => registerIn(exec, params)),
    heartbeat: (params) => exec.write(() => heartbeatIn(exec, params)),
    setEnabled: (params) => exec.write(() => setEnabledIn(exec, params)),
    drain: (params) => exec.write(() => drainIn(exec, params)),
    retire: (params) => exec.write(() => retireIn(exec, params)),
    list: () => exec.read(() => (exec.prepare(HOST_LIST).all() as HostRow[]).map(toHost)),
    fleet: () => exec.read(() => fleet(exec)),
    agentCommandLive: () =>
      exec.read(
        () => (exec.prepare(`SELECT ${AGENT_COMMAND_HOST} AS live`).get() as { live: number }).live === 1,
      ),
    setContainment: (params) =>
      exec.write(
        () =>
          exec
            .prepare(SET_CONTAINMENT)
            .run(params.containment, params.containmentRef, params.name, params.session, params.session)
            .changes === 1,
      ),
  };
}

/** hosts.register, inside the caller's write transaction; ConflictError while another live session serves the host. */
function registerIn(exec: SqliteExecutor, params: HostRegisterParams): Host {
  sessionRow(exec, params.session, true);
  const now = exec.now();
  const current = exec
    .prepare(
      `SELECT h.session_id FROM hosts h JOIN sessions s ON s.id = h.session_id
             WHERE h.name = ? AND s.state = 'live' AND h.session_id <> ?`,
    )
    .get(params.name, params.session) as { session_id: number } | undefined;
  if (current !== undefined) {
    throw new ConflictError(
      `host ${params.name} is served by live session ${current.session_id}`,
      'give this runner another name with --host, or stop the other one',
    );
  }
  exec
    .prepare(
      `INSERT INTO hosts (name, enabled, session_id, ram_total_mb, ram_reserved_mb, ram_free_mb,
               slots_max, time_limit_ms, agent_command, heartbeat_at, registered_at)
             VALUES (@name, coalesce(@enabled, 1), @session, @total, @reserved, @free, @slots, @limit, @agent,
               @now, @now)
             ON CONFLICT (name) DO UPDATE SET
               enabled = coalesce(@enabled, CASE WHEN hosts.draining = 1 THEN 1 ELSE hosts.enabled END),
               draining = 0,
               session_id = excluded.session_id,
               ram_total_mb = excluded.ram_total_mb, ram_reserved_mb = excluded.ram_reserved_mb,
               ram_free_mb = excluded.ram_free_mb, slots_max = excluded.slots_max,
               time_limit_ms = excluded.time_limit_ms, agent_command = excluded.agent_command,
               heartbeat_at = excluded.heartbeat_at`,
    )
    .run({
      name: params.name,
      enabled: params.enabled === undefined ? null : params.enabled ? 1 : 0,
      session: params.session,
      total: params.ramTotalMb,
      reserved: params.ramReservedMb,
      free: params.ramFreeMb,
      slots: params.slotsMax,
      limit: params.timeLimitMs ?? null,
      agent: params.agentCommand === undefined ? null : params.agentCommand ? 1 : 0,
      now,
    });
  const host = hostNamed(exec, params.name) as Host;
  appendAudit(exec, {
    at: now,
    type: 'host:registered',
    session: params.session,
    detail: {
      host: params.name,
      enabled: host.enabled,
      ramTotalMb: params.ramTotalMb,
      slotsMax: params.slotsMax,
      // The runner's default limit for jobs without their own (null: none), as the host row has it.
      timeLimitMs: host.timeLimitMs,
      agentCommand: host.agentCommand,
    },
  });
  return host;
}

/** hosts.heartbeat, inside the caller's write transaction: the host's free space and its session's heartbeat. */
function heartbeatIn(
  exec: SqliteExecutor,
  params: Parameters<DispatchStore['hosts']['heartbeat']>[0],
): boolean {
  const now = exec.now();
  const changed = exec
    .prepare(
      `UPDATE hosts SET ram_free_mb = ?, disk_free_mb = ?, disk_total_mb = ?, heartbeat_at = ?
             WHERE name = ? AND session_id = ?
               AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'live')`,
    )
    .run(params.ramFreeMb, ...diskOf(params), now, params.name, params.session, params.session).changes;
  if (changed === 0) return false;
  exec.prepare('UPDATE sessions SET heartbeat_at = ? WHERE id = ?').run(now, params.session);
  return true;
}

/**
 * hosts.setEnabled, inside the caller's write transaction, with its ledger row; one guarded update:
 * a host with that flag already and no drain behind it is left as it is, unchanged and unrecorded.
 */
function setEnabledIn(
  exec: SqliteExecutor,
  params: Parameters<DispatchStore['hosts']['setEnabled']>[0],
): HostToggle {
  const flag = params.enabled ? 1 : 0;
  const changed = exec
    .prepare(
      'UPDATE hosts SET enabled = ?, draining = 0 WHERE name = ? AND NOT (enabled = ? AND draining = 0)',
    )
    .run(flag, params.name, flag).changes;
  if (changed === 1) {
    appendAudit(exec, {
      at: exec.now(),
      type: params.enabled ? 'host:enabled' : 'host:disabled',
      session: params.by ?? null,
      detail: { host: params.name, by: params.actor ?? null },
    });
  }
  const host = hostNamed(exec, params.name);
  if (host === null) throw new NotFoundError('host', params.name, 'list hosts with `baton hosts`');
  return { host, changed: changed === 1 };
}

/** hosts.drain, in the caller's write transaction: an enabled host its live session serves, disabled by the drain. */
function drainIn(exec: SqliteExecutor, params: Parameters<DispatchStore['hosts']['drain']>[0]): boolean {
  const changed = exec
    .prepare(
      `UPDATE hosts SET enabled = 0, draining = 1 WHERE name = ? AND session_id = ? AND enabled = 1
         AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'live')`,
    )
    .run(params.name, params.session, params.session).changes;
  if (changed === 0) return false;
  appendAudit(exec, {
    at: exec.now(),
    type: 'host:disabled',
    session: params.session,
    detail: { host: params.name, by: 'drain' },
  });
  return true;
}

/** hosts.retire, in the caller's write transaction: a host no live session serves and no job runs on, removed. */
function retireIn(exec: SqliteExecutor, params: Parameters<DispatchStore['hosts']['retire']>[0]): HostRetire {
  const host = exec.prepare('SELECT session_id FROM hosts WHERE name = ?').get(params.name) as
    { session_id: number | null } | undefined;
  if (host === undefined) throw new NotFoundError('host', params.name, 'list hosts with `baton hosts`');
  const serving = exec
    .prepare("SELECT 1 AS live FROM sessions WHERE id = ? AND state = 'live'")
    .get(host.session_id) as { live: number } | undefined;
  if (serving !== undefined) return { outcome: 'serving' };
  const { jobs } = exec
    .prepare("SELECT count(*) AS jobs FROM jobs WHERE host = ? AND status IN ('claimed', 'running')")
    .get(params.name) as { jobs: number };
  if (jobs > 0) return { outcome: 'busy', jobs };
  exec.prepare('DELETE FROM hosts WHERE name = ?').run(params.name);
  appendAudit(exec, {
    at: exec.now(),
    type: 'host:retired',
    session: params.by ?? null,
    detail: { host: params.name, by: params.actor ?? null },
  });
  return { outcome: 'retired' };
}
