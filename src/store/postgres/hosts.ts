/**
 * Hosts and their live capacity on PostgreSQL. Each operation is one statement; a host's load
 * (active jobs, promised and pending RAM) is computed from jobs as SQLite's hostSelect does.
 *
 * Locks follow the kernel's order: a session row before the host row.
 */
import { assert } from '../../core/assert.js';
import type { Fleet } from '../../core/capacity.js';
import type { Instant } from '../../core/time.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { DispatchStore, Host, HostRegisterParams, HostRetire, HostToggle } from '../dispatch-store.js';
import { fleetOfRows, type FleetRow } from '../host-fleet.js';
import type * as shared from '../run-rows.js';
import { hostWithLoadOf } from '../run-rows.js';
import { NOW, PG, hostOf, msOf, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';
import { liveOrThrow } from './job-steps.js';

/** How often a registration that lost a race for the host row is run again. */
const REGISTER_RETRY_MAX = 20;

const HOST_FIELDS = [
  'name',
  'enabled',
  'session_id',
  'ram_total_mb',
  'ram_reserved_mb',
  'ram_free_mb',
  'slots_max',
  'heartbeat_at',
  'registered_at',
  'containment',
  'containment_ref',
  'disk_free_mb',
  'disk_total_mb',
  'draining',
  'time_limit_ms',
  'agent_command',
] as const;

const hostFields = (table: string): string => HOST_FIELDS.map((field) => `${table}.${field}`).join(', ');

/**
 * The host's load, as a LATERAL join over the host row `table`: the jobs claimed or running on
 * it, their RAM budgets, and the budgets not visible in its measured free RAM yet (claimed, or
 * started after its last heartbeat). The same sums as SQLite's three subqueries, in one scan.
 */
const load = (table: string): string => `LEFT JOIN LATERAL (
    SELECT count(*) AS jobs_active, coalesce(sum(j.ram_mb), 0) AS ram_promised_mb,
      coalesce(sum(j.ram_mb) FILTER (
        WHERE j.status = 'claimed' OR j.started_at > ${table}.heartbeat_at), 0) AS ram_pending_mb
    FROM jobs j WHERE j.host = ${table}.name AND j.status IN ('claimed', 'running')
  ) load ON true`;

const LOAD_COLUMNS = 'load.jobs_active, load.ram_promised_mb, load.ram_pending_mb';

/** Every host with its load: one index lookup of its active jobs per host (jobs_active_by_host). */
export const HOST_LIST = `SELECT ${hostFields('h')}, ${LOAD_COLUMNS} FROM hosts h ${load('h')} ORDER BY h.name`;

/**
 * The fleet as a placement sees it (core/capacity.ts Fleet): the counts of every host and the
 * enabled ones with their newest heartbeat, then the enabled hosts with a free slot and their
 * load, in name order. A full or disabled host is counted but not sent, so a saturated fleet
 * answers one row whatever its size. Always one row at least (null host columns when none is open).
 */
export const HOST_FLEET = `
WITH f AS (
  SELECT count(*) AS hosts, count(*) FILTER (WHERE enabled) AS enabled,
    ${msOf('max(heartbeat_at) FILTER (WHERE enabled)')} AS last_beat_at,
    max(ram_total_mb - ram_reserved_mb) FILTER (WHERE enabled) AS largest_budget_mb
  FROM hosts
)
SELECT f.hosts, f.enabled, f.last_beat_at, f.largest_budget_mb, o.* FROM f LEFT JOIN LATERAL (
  SELECT h.name, ${msOf('h.heartbeat_at')} AS heartbeat_at, h.ram_total_mb, h.ram_reserved_mb, h.ram_free_mb,
    h.slots_max, h.agent_command,
    ${LOAD_COLUMNS}
  FROM hosts h ${load('h')}
  WHERE h.enabled AND load.jobs_active < h.slots_max
) o ON true
ORDER BY o.name`;

/**
 * Whether an enabled host has a live runner that runs jobs without a command of their own: its
 * register said so, or did not say (a host not registered again since migration 0044); decision 0047. Not
 * correlated: an InitPlan, run once per statement.
 */
export const AGENT_COMMAND_HOST = `EXISTS (SELECT 1 FROM hosts ah JOIN sessions ahs ON ahs.id = ah.session_id
    WHERE ah.enabled AND ah.agent_command IS NOT FALSE AND ahs.state = 'live')`;

async function fleet(exec: PgExecutor): Promise<Fleet> {
  return fleetOfRows(await exec.rows<FleetRow<Instant>>(HOST_FLEET), (instant) => instant);
}

type HostRow = shared.HostRow<PgEncoding>;
const toHost = (row: HostRow): Host => hostWithLoadOf(PG, row);

/**
 * Registration, in one statement. The registering session is locked FOR KEY SHARE (as a claim
 * does), so a concurrent end either commits first and reads here as not live, or waits.
 * `other` is a live session serving the host in the snapshot: then nothing is written and the
 * caller gets a ConflictError. Otherwise the row is inserted or taken over; the ON CONFLICT
 * guard is judged on the newest, locked host row, so of two sessions racing for one host the
 * second sees the first as its server and writes nothing. A server the snapshot cannot see (its
 * session started after the snapshot) counts as live there; the next run reads it and refuses.
 */
const REGISTER = `
WITH s AS (
  SELECT id, host, state FROM sessions WHERE id = $2::bigint FOR KEY SHARE
), n AS (
  SELECT ${NOW} AS t FROM (SELECT count(*) FROM s) locked
), other AS (
  SELECT h.session_id FROM hosts h JOIN sessions o ON o.id = h.session_id
  WHERE h.name = $1::text AND o.state = 'live' AND h.session_id <> $2::bigint
), up AS (
  INSERT INTO hosts AS h (name, enabled, session_id, ram_total_mb, ram_reserved_mb, ram_free_mb,
    slots_max, time_limit_ms, agent_command, heartbeat_at, registered_at)
  SELECT $1::text, coalesce($3::boolean, true), s.id, $4::int, $5::int, $6::int, $7::int, $8::int, $9::boolean,
    n.t, n.t
  FROM s, n
  WHERE s.state = 'live' AND NOT EXISTS (SELECT 1 FROM other)
  ON CONFLICT (name) DO UPDATE SET enabled = coalesce($3::boolean, h.enabled OR h.draining), draining = false,
    session_id = excluded.session_id,
    ram_total_mb = excluded.ram_total_mb, ram_reserved_mb = excluded.ram_reserved_mb,
    ram_free_mb = excluded.ram_free_mb, slots_max = excluded.slots_max,
    time_limit_ms = excluded.time_limit_ms, agent_command = excluded.agent_command,
    heartbeat_at = excluded.heartbeat_at
  WHERE h.session_id IS NULL OR h.session_id = excluded.session_id
    OR EXISTS (SELECT 1 FROM sessions o WHERE o.id = h.session_id AND o.state <> 'live')
  RETURNING ${hostFields('h')}
), a AS (
  INSERT INTO audit_events (at, type, session_id, host, detail)
  SELECT up.heartbeat_at, 'host:registered', s.id, s.host,
    jsonb_build_object('host', up.name, 'enabled', up.enabled, 'ramTotalMb', up.ram_total_mb,
      'slotsMax', up.slots_max, 'timeLimitMs', up.time_limit_ms, 'agentCommand', up.agent_command)
  FROM up, s
)
SELECT s.state AS session_state, (SELECT min(session_id) FROM other) AS other_session,
  ${hostFields('up')}, ${LOAD_COLUMNS}
FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN up ON true ${load('up')}`;

/** The serving runner's containment ($3, $4) on host $1, written only while session $2 is live and serves it. */
const SET_CONTAINMENT = `WITH h AS (
  UPDATE hosts SET containment = $3::text, containment_ref = $4::text
  WHERE name = $1::text AND session_id = $2::bigint
    AND EXISTS (SELECT 1 FROM sessions WHERE id = $2::bigint AND state = 'live')
  RETURNING name
)
SELECT count(*) AS set FROM h`;

/** `beat` runs the heartbeat, on connections of its own (postgres-store.ts, livenessPool). */
export function postgresHosts(exec: PgExecutor, beat: PgExecutor = exec): DispatchStore['hosts'] {
  return {
    register: (params) => registerHost(exec, params),
    heartbeat: (params) => heartbeatHost(beat, params),
    setEnabled: (params) => setEnabled(exec, params),
    drain: (params) => drainHost(exec, params),
    retire: (params) => retireHost(exec, params),
    list: async () => (await exec.rows<HostRow>(HOST_LIST)).map(toHost),
    fleet: () => fleet(exec),
    agentCommandLive: async () =>
      (await exec.one<{ live: boolean }>(`SELECT ${AGENT_COMMAND_HOST} AS live`))?.live === true,
    setContainment: async (params) => {
      const values = [params.name, params.session, params.containment, params.containmentRef];
      const [row] = await exec.rows<{ set: number }>(SET_CONTAINMENT, values);
      return row?.set === 1;
    },
  };
}

/** REGISTER, run again when the host row changed hands after its snapshot. */
async function registerHost(exec: PgExecutor, params: HostRegisterParams): Promise<Host> {
  for (let attempt = 1; ; attempt++) {
    const row = await exec.one<
      Partial<HostRow> & { session_state: string | null; other_session: number | null }
    >(REGISTER, [
      params.name,
      params.session,
      params.enabled ?? null,
      params.ramTotalMb,
      params.ramReservedMb,
      params.ramFreeMb,
      params.slotsMax,
      params.timeLimitMs ?? null,
      params.agentCommand ?? null,
    ]);
    assert(row !== undefined, 'register returns exactly one row');
    liveOrThrow(params.session, row.session_state);
    if (row.name !== undefined && row.name !== null) return toHost(row as HostRow);
    if (row.other_session !== null) {
      throw new ConflictError(
        `host ${params.name} is served by live session ${row.other_session}`,
        'give this runner another name with --host, or stop the other one',
      );
    }
    // The host row changed hands after our snapshot: the next run reads its new server.
    assert(attempt < REGISTER_RETRY_MAX, 'a host registration does not race forever');
  }
}

/** hosts.heartbeat, on the liveness connections `beat`: the session's heartbeat and the host's free space. */
async function heartbeatHost(
  beat: PgExecutor,
  params: Parameters<DispatchStore['hosts']['heartbeat']>[0],
): Promise<boolean> {
  // The session row first (the kernel's lock order), written only while the session is live
  // and serves the host; the host row then re-checks its server on its newest version.
  const [row] = await beat.rows<{ beat: number }>(
    `WITH s AS (
           UPDATE sessions SET heartbeat_at = ${NOW}
           WHERE id = $2::bigint AND state = 'live'
             AND EXISTS (SELECT 1 FROM hosts WHERE name = $1::text AND session_id = $2::bigint)
           RETURNING id, heartbeat_at
         ), h AS (
           UPDATE hosts SET ram_free_mb = $3::int, disk_free_mb = $4::int, disk_total_mb = $5::int,
             heartbeat_at = s.heartbeat_at FROM s WHERE hosts.name = $1::text AND hosts.session_id = s.id
           RETURNING hosts.name
         )
         SELECT count(*) AS beat FROM h`,
    [
      params.name,
      params.session,
      params.ramFreeMb,
      params.disk?.freeMb ?? null,
      params.disk?.totalMb ?? null,
    ],
  );
  return row?.beat === 1;
}

/**
 * hosts.setEnabled: one statement, with its ledger row; NotFoundError for an unknown host. The
 * update is guarded: a host with that flag already and no drain behind it is left as it is, with
 * no ledger row, and read (FOR SHARE: its newest version, the one the guard judged) as it stands.
 */
const SET_ENABLED = `WITH u AS (
  UPDATE hosts SET enabled = $2::boolean, draining = false
  WHERE name = $1::text AND NOT (enabled = $2::boolean AND NOT draining)
  RETURNING ${hostFields('hosts')}
), a AS (
  INSERT INTO audit_events (at, type, session_id, host, detail)
  SELECT ${NOW}, CASE WHEN $2::boolean THEN 'host:enabled' ELSE 'host:disabled' END,
    $3::bigint, ${hostOf('$3::bigint')}, jsonb_build_object('host', u.name, 'by', $4::text)
  FROM u
), kept AS (
  SELECT ${hostFields('hosts')} FROM hosts WHERE name = $1::text AND NOT EXISTS (SELECT 1 FROM u) FOR SHARE
), h AS (
  SELECT ${hostFields('u')}, true AS changed FROM u
  UNION ALL SELECT ${hostFields('kept')}, false FROM kept
)
SELECT ${hostFields('h')}, h.changed, ${LOAD_COLUMNS} FROM h ${load('h')}`;

async function setEnabled(
  exec: PgExecutor,
  params: Parameters<DispatchStore['hosts']['setEnabled']>[0],
): Promise<HostToggle> {
  const row = await exec.one<HostRow & { changed: boolean }>(SET_ENABLED, [
    params.name,
    params.enabled,
    params.by ?? null,
    params.actor ?? null,
  ]);
  if (row === undefined) {
    throw new NotFoundError('host', params.name, 'list hosts with `baton hosts`');
  }
  return { host: toHost(row), changed: row.changed };
}

/** hosts.drain: one statement, with its ledger row; false unless enabled and served by the live session. */
async function drainHost(
  exec: PgExecutor,
  params: Parameters<DispatchStore['hosts']['drain']>[0],
): Promise<boolean> {
  const [row] = await exec.rows<{ drained: number }>(
    `WITH h AS (
           UPDATE hosts SET enabled = false, draining = true
           WHERE name = $1::text AND session_id = $2::bigint AND enabled
             AND EXISTS (SELECT 1 FROM sessions WHERE id = $2::bigint AND state = 'live')
           RETURNING name
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT ${NOW}, 'host:disabled', $2::bigint, ${hostOf('$2::bigint')},
             jsonb_build_object('host', h.name, 'by', 'drain')
           FROM h
         )
         SELECT count(*)::int AS drained FROM h`,
    [params.name, params.session],
  );
  return row?.drained === 1;
}

/**
 * hosts.retire: one statement, with its ledger row. The delete's own guard reads the row it
 * deletes (a register that took the host meanwhile is seen, and the host stays); the counts say
 * why it stayed, from the same snapshot.
 */
const RETIRE = `WITH d AS (
  DELETE FROM hosts WHERE name = $1::text
    AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = hosts.session_id AND s.state = 'live')
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.host = $1::text AND j.status IN ('claimed', 'running'))
  RETURNING name
), a AS (
  INSERT INTO audit_events (at, type, session_id, host, detail)
  SELECT ${NOW}, 'host:retired', $2::bigint, ${hostOf('$2::bigint')},
    jsonb_build_object('host', d.name, 'by', $3::text)
  FROM d
)
SELECT (SELECT count(*)::int FROM d) AS retired,
  (SELECT count(*)::int FROM hosts WHERE name = $1::text) AS found,
  EXISTS (SELECT 1 FROM hosts h JOIN sessions s ON s.id = h.session_id
    WHERE h.name = $1::text AND s.state = 'live') AS serving,
  (SELECT count(*)::int FROM jobs WHERE host = $1::text AND status IN ('claimed', 'running')) AS busy`;

async function retireHost(
  exec: PgExecutor,
  params: Parameters<DispatchStore['hosts']['retire']>[0],
): Promise<HostRetire> {
  const row = await exec.one<{ retired: number; found: number; serving: boolean; busy: number }>(RETIRE, [
    params.name,
    params.by ?? null,
    params.actor ?? null,
  ]);
  assert(row !== undefined, 'the retire answers one row');
  if (row.retired === 1) return { outcome: 'retired' };
  if (row.found === 0) throw new NotFoundError('host', params.name, 'list hosts with `baton hosts`');
  return row.serving ? { outcome: 'serving' } : { outcome: 'busy', jobs: row.busy };
}
