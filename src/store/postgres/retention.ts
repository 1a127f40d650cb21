/**
 * Job retention on PostgreSQL (retention-store.ts), as SQLite's: one batch is one statement on the
 * database clock. `live` is the term's check (true without a term) on the lease row locked FOR
 * SHARE (`l`, LIVE_TERM in placement.ts, as every term-fenced write here): a takeover either
 * committed first (the batch is fenced) or waits for the batch's commit. `c` picks the batch off
 * `jobs_finished`, oldest finish first after the previous batch's last job, locking its rows (a
 * row another transaction holds is left for the next pass); `o`, `k` and `d` remove the jobs'
 * output rows, their run tokens (none can open anything: a run token verifies only while its job
 * is claimed or running, and a finished job never is again) and the jobs, whose foreign keys are checked
 * at the end of the statement; `s` counts them by state and `a` writes the ledger row.
 * For stats() (migration 0038) the batch runs in a transaction that first locks `stats_retention`
 * and sets its `quiet` (so the jobs mark stays), `lg` logs the jobs in `stats_pruned` under the
 * next batch number ($11), and the last statement numbers the batch, trims the log and clears `quiet`.
 */
import { assert } from '../../core/assert.js';
import { TERMINAL_SQL } from '../job-guard.js';
import type { JobPruneParams, JobPruneResult, RetentionStore } from '../retention-store.js';
import type { PgExecutor } from './executor.js';
import { LIVE_TERM } from './placement.js';
import { NOW, msInterval, msOf } from './rows.js';
import { retentionState, type StateRow } from '../retention-state.js';

/** $1 to $3 the term (LIVE_TERM's; all null without one), $4 the retention in ms. */
const HEAD = `WITH ${LIVE_TERM}, n AS (SELECT ${NOW} AS t, ${NOW} - ${msInterval('$4')} AS cutoff),
live AS (SELECT ($1::text IS NULL OR EXISTS (SELECT 1 FROM l)) AS ok)`;

/** Over, finished before the cutoff, not kept (retention-store.ts says which are). */
const CANDIDATES = `FROM jobs j, n, live
  WHERE live.ok AND j.status IN ${TERMINAL_SQL} AND j.finished_at < n.cutoff
    AND EXISTS (SELECT 1 FROM jobs newer WHERE newer.task_id = j.task_id AND newer.id > j.id)
    AND j.id NOT IN (SELECT job_id FROM workspace_locks WHERE job_id IS NOT NULL)
    AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = j.task_id
                    AND t.holder_session_id IN (j.session_id, j.agent_session_id))`;

/**
 * Positions in `jobs_finished` travel in microseconds, exact (a bigint; the cursor's ms is this
 * over 1,000): a finish time written with sub-ms digits (SQL, a seed) would otherwise, floored to
 * the ms, leave a window that never moves past it. As strings: past Number.MAX_SAFE_INTEGER.
 */
const usOf = (expr: string): string => `(extract(epoch FROM ${expr}) * 1000000)::bigint`;
const atUs = (param: string): string =>
  `('epoch'::timestamptz + ${param}::bigint * interval '1 microsecond')`;
const toUs = (ms: number): string => String(Math.round(ms * 1000));
/** No cursor: the year 1, before any job. */
const BEFORE_ANY_US = '-62135596800000000';
/** No window end (fewer entries left than a batch may look at): the year 9999. */
const AFTER_ALL_US = '253402300799999999';

/**
 * The last entry of `jobs_finished` a batch may look at ($3 entries after the cursor $1, $2 that
 * may go before the cutoff, $4 the retention): read before the batch, on its own (a position
 * only; what the batch removes it judges itself). None: fewer are left, the sweep's end.
 */
const WINDOW_END = `SELECT ${usOf('j.finished_at')} AS at, j.id FROM jobs j
  WHERE j.status IN ${TERMINAL_SQL} AND j.finished_at < ${NOW} - ${msInterval('$4')}
    AND (j.finished_at, j.id) > (${atUs('$1')}, $2::bigint)
  ORDER BY j.finished_at, j.id OFFSET $3::bigint - 1 LIMIT 1`;

/**
 * $7 and $8 the cursor (where the previous batch stopped; none: before any time), $9 and $10 the
 * window's end: row comparisons, in microseconds, the index seeks between.
 */
export const PRUNE = `${HEAD}, c AS (
  SELECT j.id, j.finished_at ${CANDIDATES} AND (j.finished_at, j.id) > (${atUs('$7')}, $8::bigint)
    AND (j.finished_at, j.id) <= (${atUs('$9')}, $10::bigint)
  ORDER BY j.finished_at, j.id LIMIT $5::int FOR UPDATE OF j SKIP LOCKED
), o AS (
  DELETE FROM output_chunks WHERE job_id IN (SELECT id FROM c)
), k AS (
  DELETE FROM tokens WHERE job_id IN (SELECT id FROM c) RETURNING id
), d AS (
  DELETE FROM jobs WHERE id IN (SELECT id FROM c) RETURNING id, status
), g AS (
  SELECT count(*)::int AS removed, min(id) AS first_id, max(id) AS last_id FROM d
), s AS (
  INSERT INTO job_retention (status, removed, max_id, last_cutoff, last_at)
  SELECT d.status, count(*), max(d.id), n.cutoff, n.t FROM d, n GROUP BY d.status, n.cutoff, n.t
  ON CONFLICT (status) DO UPDATE SET removed = job_retention.removed + excluded.removed,
    max_id = greatest(job_retention.max_id, excluded.max_id), last_cutoff = excluded.last_cutoff,
    last_at = excluded.last_at
), lg AS (
  INSERT INTO stats_pruned (seq, status, removed, first_id, last_id)
  SELECT $11::bigint, d.status, count(*), min(d.id), max(d.id) FROM d GROUP BY d.status
), a AS (
  INSERT INTO audit_events (at, type, detail)
  SELECT n.t, 'jobs:pruned', jsonb_build_object('removed', g.removed, 'cutoff', ${msOf('n.cutoff')},
      'firstId', g.first_id, 'lastId', g.last_id, 'tokens', (SELECT count(*)::int FROM k))
    || CASE WHEN $6::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('by', $6::text) END
  FROM g, n WHERE g.removed > 0
)
SELECT live.ok, g.removed, ${msOf('n.cutoff')} AS cutoff, l.id AS last_id, ${usOf('l.finished_at')} AS last_at
  FROM live, g, n LEFT JOIN (SELECT id, finished_at FROM c ORDER BY finished_at DESC, id DESC LIMIT 1) l ON true`;

/** Batches stats_pruned keeps: a store that saw fewer counts its jobs again (docs/decisions/0040). */
const LOGGED_BATCHES = 1000;
const QUIET = 'UPDATE stats_retention SET quiet = true WHERE id = 1 RETURNING seq + 1 AS seq';
/** $1 the batch's number, $2 whether it removed jobs. */
const LOGGED = `WITH trim AS (DELETE FROM stats_pruned WHERE $2::boolean AND seq <= $1::bigint - ${LOGGED_BATCHES})
UPDATE stats_retention SET quiet = false, seq = CASE WHEN $2::boolean THEN $1::bigint ELSE seq END,
  dropped = CASE WHEN $2::boolean THEN greatest(dropped, $1::bigint - ${LOGGED_BATCHES}) ELSE dropped END
WHERE id = 1`;

const COUNT = `${HEAD}
SELECT live.ok, (SELECT count(*)::int ${CANDIDATES}) AS removed, ${msOf('n.cutoff')} AS cutoff FROM live, n`;

type Row = { ok: boolean; removed: number; cutoff: number; last_id?: string | null; last_at?: string | null };
const position = (at: string | null | undefined, id: string | null | undefined) =>
  at === undefined || at === null || id === undefined || id === null
    ? null
    : { finishedAt: Number(at) / 1000, id: Number(id) };

async function pruneJobs(exec: PgExecutor, params: JobPruneParams): Promise<JobPruneResult> {
  const { term, after, limit } = params;
  const values = [term?.lease ?? null, term?.holder ?? null, term?.term ?? null, params.olderThanMs];
  if (params.dryRun === true) {
    const counted = await exec.one<Row>(COUNT, values);
    assert(counted !== undefined, 'a count answers one row');
    if (!counted.ok) return { ok: false, reason: 'fenced' };
    return { ok: true, removed: Number(counted.removed), cutoff: Number(counted.cutoff), last: null };
  }
  const from = [after === undefined ? BEFORE_ANY_US : toUs(after.finishedAt), after?.id ?? 0];
  const scan = params.scan ?? limit * 10;
  const end = await exec.one<{ at: string; id: string }>(WINDOW_END, [...from, scan, params.olderThanMs]);
  const to = end === undefined ? [AFTER_ALL_US, Number.MAX_SAFE_INTEGER] : [end.at, end.id];
  const row = await exec.transaction(async (tx) => {
    const [quiet] = await tx.rows<{ seq: string }>(QUIET);
    const seq = Number(quiet?.seq);
    const [pruned] = await tx.rows<Row>(PRUNE, [...values, limit, params.by ?? null, ...from, ...to, seq]);
    await tx.rows(LOGGED, [seq, Number(pruned?.removed ?? 0) > 0]);
    return pruned;
  });
  assert(row !== undefined, 'a prune answers one row');
  if (!row.ok) return { ok: false, reason: 'fenced' };
  const removed = Number(row.removed);
  // Where the next batch goes on: after the last removed when the limit cut the window, else past it.
  const last = removed === limit ? position(row.last_at, row.last_id) : position(end?.at, end?.id);
  return { ok: true, removed, cutoff: Number(row.cutoff), last };
}

export function postgresRetention(exec: PgExecutor): RetentionStore['retention'] {
  return {
    pruneJobs: (params) => pruneJobs(exec, params),
    state: async () =>
      retentionState(
        await exec.rows<StateRow>('SELECT status, removed, max_id, last_cutoff, last_at FROM job_retention'),
      ),
  };
}
