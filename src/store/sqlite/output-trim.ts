/**
 * The leader's trim on SQLite (../output-trim.ts): the live jobs' attempts no run holds in one
 * write, then the two walks along `jobs_finished` (shrink after the end, drop after the cutoff), a
 * write per batch, the event loop given back between them. Each commits without its own fsync, as
 * the stream's appends do: a trim lost in a power cut leaves bytes the drop removes later.
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
import type { SqliteExecutor } from './executor.js';

/** A row of output_chunks (aliased o) that ends `keep` bytes or more before its attempt's newest byte. */
const BEHIND = `o.start_byte + length(o.bytes) <= (SELECT max(c.start_byte + length(c.bytes)) FROM output_chunks c
  WHERE c.job_id = o.job_id AND c.attempt = o.attempt) - @keep`;

/** Jobs queued again after a run, claimed or running: each attempt no run holds keeps its last bytes. */
export const TRIM_LIVE = `DELETE FROM output_chunks AS o WHERE o.job_id IN (
    SELECT id FROM jobs WHERE status IN ${HELD_SQL}
    UNION ALL SELECT id FROM jobs WHERE status = 'queued' AND attempt > 0)
  AND o.attempt <> coalesce((SELECT j.attempt FROM jobs j WHERE j.id = o.job_id AND j.status IN ${HELD_SQL}), 0)
  AND ${BEHIND}`;

/** The next `limit` finished jobs after (@at, @id) that ended before @until, by finish then id. */
export const FINISHED_AFTER = `SELECT id, finished_at AS at FROM jobs INDEXED BY jobs_finished
  WHERE status IN ${TERMINAL_SQL} AND finished_at < @until AND (finished_at, id) > (@at, @id)
  ORDER BY finished_at, id LIMIT @limit`;

const TRIM_JOBS = `DELETE FROM output_chunks AS o WHERE o.job_id IN (SELECT value FROM json_each(@ids))
  AND (@drop OR ${BEHIND})`;

/** One batch of a walk: `drop` removes the jobs' rows, else each attempt keeps its last `keep` bytes. */
function batch(exec: SqliteExecutor, keep: number, until: number, drop: boolean): TrimBatch {
  return (after, limit) =>
    Promise.resolve(
      exec.writeNotDurable(() => {
        const from = after ?? { at: -Infinity, id: 0 };
        const jobs = exec.prepare(FINISHED_AFTER).all({ ...from, until, limit }) as {
          id: number;
          at: number;
        }[];
        const ids = JSON.stringify(jobs.map((job) => job.id));
        const deleted = exec.prepare(TRIM_JOBS).run({ ids, drop: Number(drop), keep }).changes;
        const last: FinishedCursor | null = jobs.at(-1) ?? null;
        // Caught up, the next pass resumes OVERLAP_MS behind the newest job read (or where it stood).
        const newest = last ?? after;
        const back = newest === null ? null : { at: Number(newest.at) - OVERLAP_MS, id: 0 };
        return { deleted, read: jobs.length, last, back };
      }),
    );
}

const LOAD = 'SELECT at, id FROM output_trim_walks WHERE walk = @walk';
const SAVE = `INSERT INTO output_trim_walks (walk, at, id) VALUES (@walk, @at, @id)
  ON CONFLICT (walk) DO UPDATE SET at = excluded.at, id = excluded.id`;

/** The walk's cursor in `output_trim_walks` (migration 0046). */
function kept(exec: SqliteExecutor, walk: 'shrink' | 'drop'): WalkCursor {
  return {
    load: () => Promise.resolve((exec.prepare(LOAD).get({ walk }) as FinishedCursor | undefined) ?? null),
    save: (cursor) =>
      Promise.resolve(
        exec.writeNotDurable(() => void exec.prepare(SAVE).run({ walk, at: cursor.at, id: cursor.id })),
      ),
  };
}

export function sqliteOutputTrim(exec: SqliteExecutor): OutputStore['output']['trim'] {
  const shrunk = new FinishedWalk(kept(exec, 'shrink'));
  const dropped = new FinishedWalk(kept(exec, 'drop'));
  return async ({ keep, endedBefore, batch: limit = TRIM_BATCH }) => {
    let deleted = exec.writeNotDurable(() => exec.prepare(TRIM_LIVE).run({ keep }).changes);
    deleted += await shrunk.run(batch(exec, keep, Number.MAX_SAFE_INTEGER, false), limit);
    deleted += await dropped.run(batch(exec, keep, endedBefore, true), limit);
    return deleted;
  };
}
