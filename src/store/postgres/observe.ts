/**
 * The operator's reads on PostgreSQL (observe-store.ts). stats() is one statement, so its
 * figures come from one snapshot.
 */
import type { Count, HostReport, LiveClaim, ObserveStore } from '../observe-store.js';
import type * as shared from '../run-rows.js';
import { liveClaimOf } from '../run-rows.js';
import { EXPIRED, NOW, PG, jobColumns, ms, msOrNull, toJob, type JobRow, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';
import { AGENT_COMMAND_HOST } from './hosts.js';
import { taskHolds, tasksPage } from './task-page.js';
import { StatsTotals, TOTALS_COLUMNS, type TotalsRows } from './stats-totals.js';

/**
 * A page of jobs, newest first: an index scan backwards on the primary key from the keyset
 * `id < $1`, which stops after $5 matches (test/dashboard/queue-scale.test.ts counts the rows
 * it reads at 100,000 jobs). The task key is looked up for the page's rows only.
 */
export const JOB_PAGE_SQL = `SELECT ${jobColumns('jobs')} FROM jobs
  WHERE id < $1::bigint
    AND ($2::text[] IS NULL OR status = ANY ($2::text[]))
    AND ($3::text IS NULL OR host = $3::text)
    AND ($4::text IS NULL OR task_id = (SELECT id FROM tasks WHERE key = $4::text))
  ORDER BY id DESC
  LIMIT $5::int`;

/** The live claim's active job comes as JSON (to_jsonb), read by jobFromJson. */
interface LiveClaimRow extends shared.LiveClaimRow<PgEncoding> {
  job: Record<string, unknown> | null;
}

interface StatsRow extends TotalsRows {
  now: Date;
  waiting: Count[] | null;
  bare_waiting: number;
  bare_unreasoned: number;
  oldest: Date | null;
  max_id: number;
  past_ttl: number;
  hosts: HostReport[] | null;
  keys: number;
  unsealed: number;
  oldest_unsealed: Date | null;
}

/** A job as JSON from a lateral subquery: its timestamps come back as text, read as dates. */
function jobFromJson(json: Record<string, unknown>): JobRow {
  const at = (value: unknown): Date | null =>
    value === null || value === undefined ? null : new Date(value as string);
  return {
    ...(json as unknown as JobRow),
    queued_at: at(json['queued_at']) ?? new Date(0),
    run_after: at(json['run_after']) ?? new Date(0),
    claimed_at: at(json['claimed_at']),
    started_at: at(json['started_at']),
    finished_at: at(json['finished_at']),
  };
}

const grouped = (sql: string): string =>
  `(SELECT jsonb_agg(jsonb_build_object('name', g.name, 'count', g.count)) FROM (${sql}) g)`;

/** Each host as a HostReport (observe-store.ts): its last report, and its runner session while live. */
const HOSTS = `(SELECT jsonb_agg(jsonb_build_object(
       'name', h.name, 'enabled', h.enabled, 'draining', h.draining,
       'heartbeatAt', round(extract(epoch FROM h.heartbeat_at) * 1000)::float8,
       'liveSession', CASE WHEN s.id IS NULL THEN NULL ELSE jsonb_build_object('id', s.id, 'ttlMs', s.ttl_ms) END
     ) ORDER BY h.name)
   FROM hosts h LEFT JOIN sessions s ON s.id = h.session_id AND s.state = 'live')`;

/** The ledger's tamper window (observe-store.ts): index probes only. */
const LEDGER_WINDOW_SQL = `SELECT (SELECT count(*)::int FROM ledger_keys) AS keys,
       greatest((SELECT coalesce(max(id), 0) FROM audit_events) - s.through, 0)::float8 AS unsealed,
       (SELECT at FROM audit_events WHERE id > s.through ORDER BY id LIMIT 1) AS oldest_unsealed
  FROM (SELECT coalesce(max(last_id), 0) AS through FROM audit_checkpoints) s`;

/**
 * The queued jobs without a command while no live host can run them (StoreStats.agentCommandWait):
 * AGENT_COMMAND_HOST is an uncorrelated InitPlan, a one-time filter, so while such a host is live
 * no job is read; otherwise the queued jobs through `jobs_queue`, as the waiting count walks them.
 */
const AGENT_COMMAND_WAIT_SQL = `SELECT count(*)::int AS jobs, count(*) FILTER (WHERE reason IS NULL)::int AS unreasoned
  FROM jobs WHERE status = 'queued' AND command IS NULL AND NOT ${AGENT_COMMAND_HOST}`;

/**
 * store.observe.stats in one statement: the running counts of stats-totals.ts ($1…$9), the live
 * claims' oldest heartbeat and the waiting jobs through their partial indexes, then the health figures.
 */
const STATS_SQL = `SELECT ${NOW} AS now,
     ${TOTALS_COLUMNS},
     ${grouped(
       `SELECT reason AS name, count(*)::int AS count FROM jobs
        WHERE status = 'queued' AND reason IS NOT NULL GROUP BY reason`,
     )} AS waiting,
     b.jobs AS bare_waiting, b.unreasoned AS bare_unreasoned,
     (SELECT min(heartbeat_at) FROM claims WHERE released_at IS NULL) AS oldest,
     (SELECT coalesce(max(id), 0)::float8 FROM audit_events) AS max_id,
     (SELECT count(*)::int FROM claims cl JOIN sessions s ON s.id = cl.session_id
      WHERE cl.released_at IS NULL AND ${EXPIRED('s')}) AS past_ttl,
     ${HOSTS} AS hosts,
     l.keys, l.unsealed, l.oldest_unsealed
   FROM (${LEDGER_WINDOW_SQL}) l, (${AGENT_COMMAND_WAIT_SQL}) b`;

export function postgresObserve(exec: PgExecutor): ObserveStore['observe'] {
  const totals = new StatsTotals(exec);
  return {
    jobsPage: async (params) =>
      (
        await exec.rows<JobRow>(JOB_PAGE_SQL, [
          params.beforeId ?? Number.MAX_SAFE_INTEGER,
          params.status === undefined ? null : [...params.status],
          params.host ?? null,
          params.key ?? null,
          params.limit,
        ])
      ).map(toJob),
    tasksPage: (params) => tasksPage(exec, params),
    taskHolds: (keys) => taskHolds(exec, keys),
    liveClaims: async () => {
      const rows = await exec.rows<LiveClaimRow>(
        `SELECT t.key, c.epoch, c.claimed_at, c.heartbeat_at, c.session_id,
                s.kind, s.host, s.pid, s.name, s.ttl_ms, to_jsonb(j) AS job
         FROM claims c JOIN tasks t ON t.id = c.task_id JOIN sessions s ON s.id = c.session_id
         LEFT JOIN LATERAL (
           SELECT ${jobColumns('jobs')} FROM jobs
           WHERE jobs.task_id = c.task_id AND jobs.status IN ('queued', 'claimed', 'running')
         ) j ON true
         WHERE c.released_at IS NULL
         ORDER BY c.heartbeat_at, c.id`,
      );
      return rows.map((row): LiveClaim =>
        liveClaimOf(PG, row, row.job === null ? null : toJob(jobFromJson(row.job))),
      );
    },
    stats: async () => {
      const { row, totals: figures } = await totals.read(async (params) => {
        const one = await exec.one<StatsRow>(STATS_SQL, params);
        if (one === undefined) throw new Error('stats gives one row');
        return one;
      });
      return {
        now: ms(row.now),
        ...figures,
        waitingByReason: row.waiting ?? [],
        agentCommandWait: { jobs: row.bare_waiting, withoutReason: row.bare_unreasoned },
        oldestClaimHeartbeatAt: msOrNull(row.oldest),
        auditMaxId: Number(row.max_id),
        claimsPastTtl: row.past_ttl,
        hosts: row.hosts ?? [],
        ledger: {
          keys: row.keys,
          unsealedRows: row.unsealed,
          oldestUnsealedAt: msOrNull(row.oldest_unsealed),
        },
      };
    },
    ledgerWindow: async () => {
      const row = await exec.one<Pick<StatsRow, 'keys' | 'unsealed' | 'oldest_unsealed'>>(LEDGER_WINDOW_SQL);
      if (row === undefined) throw new Error('the ledger window gives one row');
      return { keys: row.keys, unsealedRows: row.unsealed, oldestUnsealedAt: msOrNull(row.oldest_unsealed) };
    },
    auditMaxId: async () => {
      const row = await exec.one<{ id: number }>(
        'SELECT coalesce(max(id), 0)::float8 AS id FROM audit_events',
      );
      return Number(row?.id ?? 0);
    },
  };
}
