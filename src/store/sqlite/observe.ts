/**
 * The operator's reads on SQLite (observe-store.ts). Each runs in one read transaction, so its
 * figures agree with one another.
 */
import type { Count, LedgerWindow, LiveClaim, ObserveStore, StoreStats } from '../observe-store.js';
import type * as shared from '../run-rows.js';
import { liveClaimOf } from '../run-rows.js';
import { EXPIRED, SQLITE, toJob, type JobRow, type SqliteEncoding } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { taskHoldsIn, tasksPageIn } from './task-page.js';
import { persistTotals, totalsIn, type StatsTotals } from './stats-totals.js';
import { PrefixTotals } from '../prefix-totals.js';
import { AGENT_COMMAND_HOST } from './hosts.js';

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';

/**
 * A page of jobs, newest first: the primary key orders it and `id < @before` is the keyset, so
 * SQLite walks the rowid backwards from the cursor and stops after @limit matches, whatever the
 * table's size (test/dashboard/queue-scale.test.ts reads the plan at 100,000 jobs).
 */
export const JOB_PAGE_SQL = `${JOB_SELECT}
  WHERE j.id < @before
    AND (@statuses IS NULL OR j.status IN (SELECT value FROM json_each(@statuses)))
    AND (@host IS NULL OR j.host = @host)
    AND (@key IS NULL OR t.key = @key)
  ORDER BY j.id DESC
  LIMIT @limit`;

/** The live states' partial indexes (jobs_queue; jobs_active and jobs_active_by_host), by the states they hold. */
const LIVE_PARTS = [
  { holds: ['queued'], ids: `SELECT id FROM jobs WHERE status = 'queued' AND +id < @before` },
  {
    holds: ['claimed', 'running'],
    ids: `SELECT id FROM jobs WHERE status IN ('claimed', 'running') AND +id < @before`,
  },
] as const;

/**
 * The page's statement for these states. Asked for live states only (the Hosts view's running
 * jobs per host, the queued jobs doctor and the Workspaces view read), a backward walk would read
 * every finished job when fewer than @limit match: 130-230 ms at a million jobs, on the event loop
 * of the `baton up` serving the dashboard. Those pages read the ids through the states' partial
 * indexes instead, so they cost what the live jobs number, and sort only those.
 */
export function jobPageSql(statuses: readonly string[] | undefined): string {
  if (statuses === undefined || statuses.length === 0) return JOB_PAGE_SQL;
  const parts = LIVE_PARTS.filter((part) =>
    statuses.some((status) => (part.holds as readonly string[]).includes(status)),
  );
  const live = statuses.every((status) =>
    parts.some((part) => (part.holds as readonly string[]).includes(status)),
  );
  if (!live) return JOB_PAGE_SQL;
  return JOB_PAGE_SQL.replace(
    'WHERE j.id < @before',
    `WHERE j.id IN (${parts.map((part) => part.ids).join(' UNION ALL ')})`,
  );
}

/** The live claim's task id, to read its active job beside it. */
interface LiveClaimRow extends shared.LiveClaimRow<SqliteEncoding> {
  task_id: number;
}

const counts = (rows: readonly { name: string; count: number }[]): readonly Count[] =>
  rows.map((row) => ({ name: row.name, count: row.count }));

/** The newest ledger row's id, 0 for an empty ledger. */
function auditMaxId(exec: SqliteExecutor): number {
  return (exec.prepare('SELECT coalesce(max(id), 0) AS id FROM audit_events').get() as { id: number }).id;
}

export function sqliteObserve(exec: SqliteExecutor): Sync<ObserveStore['observe']> {
  const totals: StatsTotals = {
    jobs: new PrefixTotals(),
    claims: new PrefixTotals(),
    ledger: new PrefixTotals(),
    tasks: new PrefixTotals(),
  };
  return {
    jobsPage: (params) =>
      exec.read(() => {
        const statuses = params.status === undefined ? null : JSON.stringify(params.status);
        const rows = exec.prepare(jobPageSql(params.status)).all({
          before: params.beforeId ?? Number.MAX_SAFE_INTEGER,
          statuses,
          host: params.host ?? null,
          key: params.key ?? null,
          limit: params.limit,
        }) as JobRow[];
        return rows.map(toJob);
      }),
    tasksPage: (params) => exec.read(() => tasksPageIn(exec, params)),
    taskHolds: (keys) => exec.read(() => taskHoldsIn(exec, keys)),
    liveClaims: () => exec.read(() => liveClaimsIn(exec)),
    stats: () => {
      const stats = exec.read(() => statsIn(exec, totals));
      persistTotals(exec, totals);
      return stats;
    },
    ledgerWindow: () => exec.read(() => ledgerWindowIn(exec)),
    auditMaxId: () => exec.read(() => auditMaxId(exec)),
  };
}

/** observe.liveClaims, inside the caller's read transaction: each live claim with its task's active job. */
function liveClaimsIn(exec: SqliteExecutor): LiveClaim[] {
  const rows = exec
    .prepare(
      `SELECT t.key, c.task_id, c.epoch, c.claimed_at, c.heartbeat_at, c.session_id,
                      s.kind, s.host, s.pid, s.name, s.ttl_ms
               FROM claims c JOIN tasks t ON t.id = c.task_id JOIN sessions s ON s.id = c.session_id
               WHERE c.released_at IS NULL
               ORDER BY c.heartbeat_at, c.id`,
    )
    .all() as LiveClaimRow[];
  const active = exec.prepare(
    `${JOB_SELECT} WHERE j.task_id = ? AND j.status IN ('queued', 'claimed', 'running')`,
  );
  return rows.map((row): LiveClaim => {
    const job = active.get(row.task_id) as JobRow | undefined;
    return liveClaimOf(SQLITE, row, job === undefined ? null : toJob(job));
  });
}

/** observe.stats, inside the caller's read transaction, so its figures agree. */
function statsIn(exec: SqliteExecutor, totals: StatsTotals): StoreStats {
  // The live claims through their partial index (claims_one_live_per_task): as many as are held.
  const oldest = exec
    .prepare('SELECT min(heartbeat_at) AS oldest FROM claims WHERE released_at IS NULL')
    .get() as { oldest: number | null };
  const now = exec.now();
  return {
    now,
    ...totalsIn(exec, totals),
    waitingByReason: counts(
      exec
        .prepare(
          `SELECT reason AS name, count(*) AS count FROM jobs
           WHERE status = 'queued' AND reason IS NOT NULL GROUP BY reason`,
        )
        .all() as { name: string; count: number }[],
    ),
    agentCommandWait: agentCommandWaitIn(exec),
    oldestClaimHeartbeatAt: oldest.oldest,
    auditMaxId: auditMaxId(exec),
    ...healthIn(exec, now),
  };
}

/**
 * StoreStats.agentCommandWait: first whether a host that can run such jobs is live (one read of
 * the hosts_agent_command index; SQLite would still walk the queue under a constant false
 * condition), and only when none is, the queued jobs without a command through `jobs_queue`, as
 * the waiting count walks them; in the caller's read transaction, so the two agree.
 */
function agentCommandWaitIn(exec: SqliteExecutor): StoreStats['agentCommandWait'] {
  const able = exec.prepare(`SELECT ${AGENT_COMMAND_HOST} AS live`).get() as { live: number };
  if (able.live === 1) return { jobs: 0, withoutReason: 0 };
  const row = exec
    .prepare(
      `SELECT count(*) AS jobs, coalesce(sum(reason IS NULL), 0) AS unreasoned FROM jobs
       WHERE status = 'queued' AND command IS NULL`,
    )
    .get() as { jobs: number; unreasoned: number };
  return { jobs: row.jobs, withoutReason: row.unreasoned };
}

interface HostRow {
  name: string;
  enabled: number;
  draining: number;
  heartbeat_at: number;
  live_session: number | null;
  ttl_ms: number | null;
}

/** The figures an operator is paged on (hosts, tasks waiting for people, the ledger's window), in stats' read. */
function healthIn(exec: SqliteExecutor, now: number): Pick<StoreStats, 'claimsPastTtl' | 'hosts' | 'ledger'> {
  const hosts = exec
    .prepare(
      `SELECT h.name, h.enabled, h.draining, h.heartbeat_at, s.id AS live_session, s.ttl_ms
       FROM hosts h LEFT JOIN sessions s ON s.id = h.session_id AND s.state = 'live' ORDER BY h.name`,
    )
    .all() as HostRow[];
  const pastTtl = exec
    .prepare(
      `SELECT count(*) AS n FROM claims c JOIN sessions s ON s.id = c.session_id
       WHERE c.released_at IS NULL
         AND ${EXPIRED('s')}`,
    )
    .get({ now }) as { n: number };
  return {
    claimsPastTtl: pastTtl.n,
    hosts: hosts.map((row) => ({
      name: row.name,
      enabled: row.enabled === 1,
      draining: row.draining === 1,
      heartbeatAt: row.heartbeat_at,
      liveSession: row.live_session === null ? null : { id: row.live_session, ttlMs: row.ttl_ms },
    })),
    ledger: ledgerWindowIn(exec),
  };
}

/** The ledger's tamper window (observe-store.ts): three index probes. */
function ledgerWindowIn(exec: SqliteExecutor): LedgerWindow {
  const ledger = exec
    .prepare(
      `SELECT (SELECT count(*) FROM ledger_keys) AS keys,
              max((SELECT coalesce(max(id), 0) FROM audit_events) - s.through, 0) AS unsealed,
              (SELECT at FROM audit_events WHERE id > s.through ORDER BY id LIMIT 1) AS oldest
       FROM (SELECT coalesce(max(last_id), 0) AS through FROM audit_checkpoints) s`,
    )
    .get() as { keys: number; unsealed: number; oldest: number | null };
  return { keys: ledger.keys, unsealedRows: ledger.unsealed, oldestUnsealedAt: ledger.oldest };
}
