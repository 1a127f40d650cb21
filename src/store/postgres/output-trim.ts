/**
 * The leader's trim on PostgreSQL (../output-trim.ts): the live jobs' attempts no run holds in one
 * statement, then the two walks along `jobs_finished` (shrink after the end, drop after the cutoff),
 * a statement per batch. The cursor keeps the finish as the server's text, so it reads back exactly.
 */
import { HELD_SQL, TERMINAL_SQL } from '../job-guard.js';
import type { OutputStore } from '../output-store.js';
import { FinishedWalk, OVERLAP_MS, TRIM_BATCH, type FinishedCursor, type TrimBatch } from '../output-trim.js';
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
 * One batch: the next $5 finished jobs after ($3, $4) that ended before $2 (ms; null: any), by
 * finish then id; $6: drop their rows, else shrink each attempt to its last $1 bytes.
 */
const TRIM_BATCH_SQL = `WITH b AS (
  SELECT id, finished_at FROM jobs
  WHERE status IN ${TERMINAL_SQL} AND ($2::float8 IS NULL OR finished_at < to_timestamp($2::float8 / 1000))
    AND (finished_at, id) > (coalesce($3::timestamptz, '-infinity'), $4::bigint)
  ORDER BY finished_at, id LIMIT $5::int
), d AS (
  DELETE FROM output_chunks o USING b WHERE o.job_id = b.id AND ($6::boolean OR ${BEHIND})
  RETURNING 1
), l AS (
  SELECT id, finished_at FROM b ORDER BY finished_at DESC, id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM d)::int AS deleted, (SELECT count(*) FROM b)::int AS read,
  (SELECT id FROM l) AS id, (SELECT finished_at::text FROM l) AS at,
  (SELECT (finished_at - $7::int * interval '1 millisecond')::text FROM l) AS back_at`;

interface BatchRow {
  readonly deleted: number;
  readonly read: number;
  readonly id: string | null;
  readonly at: string | null;
  readonly back_at: string | null;
}

function batch(exec: PgExecutor, keep: number, until: number | null, drop: boolean): TrimBatch {
  return async (after, limit) => {
    const values = [keep, until, after?.at ?? null, after?.id ?? 0, limit, drop, OVERLAP_MS];
    const row = (await exec.rows<BatchRow>(TRIM_BATCH_SQL, values))[0];
    if (row === undefined || row.id === null || row.at === null || row.back_at === null) {
      return { deleted: row?.deleted ?? 0, read: 0, last: null, back: null };
    }
    const last: FinishedCursor = { at: row.at, id: Number(row.id) };
    return { deleted: row.deleted, read: row.read, last, back: { at: row.back_at, id: 0 } };
  };
}

export function postgresOutputTrim(exec: PgExecutor): OutputStore['output']['trim'] {
  const shrunk = new FinishedWalk();
  const dropped = new FinishedWalk();
  return async ({ keep, endedBefore, batch: limit = TRIM_BATCH }) => {
    let deleted = (await exec.rows<{ n: number }>(TRIM_LIVE, [keep]))[0]?.n ?? 0;
    deleted += await shrunk.run(batch(exec, keep, null, false), limit);
    deleted += await dropped.run(batch(exec, keep, endedBefore, true), limit);
    return deleted;
  };
}
