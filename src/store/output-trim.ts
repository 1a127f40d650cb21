/**
 * The leader's trim of the output stream (output-store.ts `trim`, docs/decisions/0029 and 0043) as
 * walks, not a read of every row kept: a statement that grouped every kept row of every job took
 * about a second a minute at 100,000 finished jobs with output, on SQLite's event loop.
 *
 * A pass shrinks the attempts no run holds and drops the jobs that ended before the cutoff:
 *  - the live jobs (queued after a run, claimed, running) are read through their partial indexes,
 *    as few as the fleet runs or queues;
 *  - the finished jobs are walked along `jobs_finished`, oldest finish first, in batches, from where
 *    the store's last pass stopped: each job is shrunk once after it ends and dropped once after the
 *    cutoff passes it. A caught-up walk resumes 10 s back (OVERLAP_MS): on PostgreSQL a
 *    finish's time is taken before its commit, so a job may appear behind a walk that passed its time.
 *
 * The cursors live in the database (`output_trim_walks`, one row per walk), read at the start of
 * each walk and written at its end: a new leader, or a restarted one, resumes where the last pass
 * of any process stopped. (Kept in each process's memory before, a new leader's first passes walked
 * the whole history again, 10,000 jobs a minute, and newly ended jobs waited behind that walk.)
 * Not fenced by the term: a deposed leader that writes its cursor has trimmed up to it.
 */

/** Where a walk along `jobs_finished` stands: the last job it read, by finish then id, as the engine keeps it. */
export interface FinishedCursor {
  readonly at: number | string;
  readonly id: number;
}

/** One batch of a walk, by the engine: at most `limit` finished jobs after `after`, their rows trimmed. */
export type TrimBatch = (
  after: FinishedCursor | null,
  limit: number,
) => Promise<{
  readonly deleted: number;
  readonly read: number;
  /**
   * The last job read, and OVERLAP_MS before it (before `after` when none was read): where a
   * caught-up walk resumes.
   */
  readonly last: FinishedCursor | null;
  readonly back: FinishedCursor | null;
}>;

/** How far back a caught-up walk resumes. */
export const OVERLAP_MS = 10_000;

/** Jobs per batch, and batches per pass (a history longer than that is walked over several passes). */
export const TRIM_BATCH = 500;
const TRIM_BATCHES_MAX = 20;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Where a walk's cursor is kept between passes, by the engine (none yet: from the start). */
export interface WalkCursor {
  load(): Promise<FinishedCursor | null>;
  save(cursor: FinishedCursor): Promise<void>;
}

/**
 * A walk along the finished jobs, resumed by each call from its kept cursor, giving the event loop
 * back between batches; the cursor it reached is kept at the end of the call.
 */
export class FinishedWalk {
  constructor(private readonly cursor: WalkCursor) {}

  async run(batch: TrimBatch, limit: number): Promise<number> {
    let after = await this.cursor.load();
    let deleted = 0;
    for (let round = 0; round < TRIM_BATCHES_MAX; round++) {
      if (round > 0) await turn();
      const step = await batch(after, limit);
      deleted += step.deleted;
      if (step.read < limit) {
        // Caught up: the next pass resumes a little behind the newest job read.
        after = step.back ?? after;
        break;
      }
      after = step.last;
    }
    if (after !== null) await this.cursor.save(after);
    return deleted;
  }
}
