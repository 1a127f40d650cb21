/**
 * The leader's trim on PostgreSQL (../output-trim.ts): the live jobs' attempts no run holds in one
 * statement, then the two walks along `jobs_finished` (shrink after the end, drop after the cutoff),
 * a statement per batch. The cursor keeps the finish as the server's text, so it reads back exactly.
 */
import { HELD_SQL, TERMINAL_SQL } from '../job-guard.js';
import type { OutputStore } from '../output-store.js';
import {
  FinishedWalk,
  OVERLAP_MS,
  TRIM_BATCH,
  type FinishedCursor,
  type TrimBatch,
  type WalkCursor,
} from '../output-trim.js';
import type { PgExecutor } from './executor.js';

/** A row of output_chunks (aliased o) that ends $1 bytes or more before its attempt's newest byte. */
const BEHIND = `o.start_byte + length(o.bytes) <= (SELECT max(c.start_byte + length(c.bytes)) FROM output_chunks c
  WHERE c.job_id = o.job_id AND c.attempt = o.attempt) - $1::bigint`;

/** Jobs queued again after a run, claimed or running: each attempt no run holds keeps its last $1 bytes. */
const TRIM_LIVE = `WITH d AS (
  DELETE FROM output_chunks o WHERE o.job_id IN (
      SELECT id FROM jobs WHERE status IN ${HELD_SQL}
      UNION ALL SELECT id FROM jobs WHERE status = 'queued' AND attempt > 0)
    AND o.attempt <> coalesce((SELECT j.attempt FROM jobs j WHERE j.id = o.job_id AND j.status IN ${HELD_SQL}), 0)
    AND ${BEHIND}
  RETURNING 1
)
SELECT count(*)::int AS n FROM d`;

/**
 * One batch of a walk (`part` limits the finished jobs and trims their rows): the next $4 finished
 * jobs after ($2, $3) by finish then id. Two statements, not one with `$n IS NULL OR`: the executor
 * keeps its statements, and a generic plan must still seek `jobs_finished` by the cursor (and the
 * drop's cutoff), in order (generic-plans.test.ts).
 */
const batchSql = (part: { readonly where: string; readonly trim: string }): string => `WITH b AS (
  SELECT id, finished_at FROM jobs
  WHERE status IN ${TERMINAL_SQL} ${part.where}
    AND (finished_at, id) > (coalesce($2::timestamptz, '-infinity'), $3::bigint)
  ORDER BY finished_at, id LIMIT $4::int
), d AS (
  DELETE FROM output_chunks o USING b WHERE o.job_id = b.id ${part.trim}
  RETURNING 1
), l AS (
  SELECT id, finished_at FROM b ORDER BY finished_at DESC, id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM d)::int AS deleted, (SELECT count(*) FROM b)::int AS read,
  (SELECT id FROM l) AS id, (SELECT finished_at::text FROM l) AS at,
  (coalesce((SELECT finished_at FROM l), $2::timestamptz) - $5::int * interval '1 millisecond')::text AS back_at`;

/** $1 the bytes an ended attempt keeps. */
export const SHRINK_SQL = batchSql({ where: '', trim: `AND ${BEHIND}` });
/** $1 the cutoff (ms): the jobs that ended before it lose their rows. */
export const DROP_SQL = batchSql({ where: 'AND finished_at < to_timestamp($1::float8 / 1000)', trim: '' });

interface BatchRow {
  readonly deleted: number;
  readonly read: number;
  readonly id: string | null;
  readonly at: string | null;
  readonly back_at: string | null;
}

/** One batch of the walk `sql` (SHRINK_SQL or DROP_SQL) with its first value `first`. */
function batch(exec: PgExecutor, sql: string, first: number): TrimBatch {
  return async (after, limit) => {
    const values = [first, after?.at ?? null, after?.id ?? 0, limit, OVERLAP_MS];
    const row = (await exec.rows<BatchRow>(sql, values))[0];
    if (row === undefined || row.id === null || row.at === null) {
      // Nothing read: the next pass resumes OVERLAP_MS behind where this one stood.
      const back = row?.back_at === null || row?.back_at === undefined ? null : { at: row.back_at, id: 0 };
      return { deleted: row?.deleted ?? 0, read: 0, last: null, back };
    }
    const last: FinishedCursor = { at: row.at, id: Number(row.id) };
    return {
      deleted: row.deleted,
      read: row.read,
      last,
      back: row.back_at === null ? null : { at: row.back_at, id: 0 },
    };
  };
}

/** The cursor's time read back as the server's text, as the walk keeps it (exact to the microsecond). */
const LOAD = 'SELECT at::text AS at, id FROM output_trim_walks WHERE walk = $1::text';
const SAVE = `INSERT INTO output_trim_walks (walk, at, id) VALUES ($1::text, $2::timestamptz, $3::bigint)
  ON CONFLICT (walk) DO UPDATE SET at = excluded.at, id = excluded.id`;

/** The walk's cursor in `output_trim_walks` (migration 0046). */
function kept(exec: PgExecutor, walk: 'shrink' | 'drop'): WalkCursor {
  return {
    load: async () => {
      const row = (await exec.rows<{ at: string; id: string }>(LOAD, [walk]))[0];
      return row === undefined ? null : { at: row.at, id: Number(row.id) };
    },
    save: async (cursor) => {
      await exec.rows(SAVE, [walk, cursor.at, cursor.id]);
    },
  };
}

export function postgresOutputTrim(exec: PgExecutor): OutputStore['output']['trim'] {
  const shrunk = new FinishedWalk(kept(exec, 'shrink'));
  const dropped = new FinishedWalk(kept(exec, 'drop'));
  return async ({ keep, endedBefore, batch: limit = TRIM_BATCH }) => {
    let deleted = (await exec.rows<{ n: number }>(TRIM_LIVE, [keep]))[0]?.n ?? 0;
    deleted += await shrunk.run(batch(exec, SHRINK_SQL, keep), limit);
    deleted += await dropped.run(batch(exec, DROP_SQL, endedBefore), limit);
    return deleted;
  };
}
