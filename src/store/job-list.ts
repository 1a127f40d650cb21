/**
 * jobs.list's order, in SQL both engines read alike: the busiest states first (running, claimed,
 * queued), those in queue order (priority, queued_at, id); then the finished jobs, newest first.
 *
 * Each engine reads the list in parts that its indexes answer whatever the table's size (the
 * live states through their partial indexes, the finished jobs by a backward walk of the primary
 * key that stops at the limit), and orders the parts' rows with JOB_LIST_ORDER. Before, one sort
 * of every job answered it: 1.9 s for `baton queue list` at a million finished jobs on SQLite, 2.9 s
 * on PostgreSQL, and the finished ones came oldest first.
 */
import { JOB_STATES, type JobId, type JobState } from '../core/job.js';

export interface JobListParams {
  readonly status?: readonly JobState[] | undefined;
  readonly key?: string | undefined;
  readonly limit?: number | undefined;
  /** Only the finished jobs older than this id, newest first: the page after one that ended at it. */
  readonly before?: JobId | undefined;
}

const LIVE = `status IN ('running', 'claimed', 'queued')`;

export const JOB_LIST_ORDER = `CASE status WHEN 'running' THEN 0 WHEN 'claimed' THEN 1 WHEN 'queued' THEN 2 ELSE 3 END,
    CASE WHEN ${LIVE} THEN priority END, CASE WHEN ${LIVE} THEN queued_at END,
    CASE WHEN ${LIVE} THEN id ELSE -id END`;

/** A part of the list: the states it holds, its WHERE (without the status filter) and its order. */
export interface JobListPart {
  readonly where: string;
  readonly order: string;
}

/** The finished part, the last: the only one `before` pages (the live ones are few and unordered by id). */
const PARTS: readonly (JobListPart & { readonly holds: readonly JobState[] })[] = [
  {
    holds: ['claimed', 'running'],
    where: `status IN ('claimed', 'running')`,
    order: `status <> 'running', priority, queued_at, id`,
  },
  { holds: ['queued'], where: `status = 'queued'`, order: 'priority, queued_at, id' },
  {
    holds: JOB_STATES.filter((state) => !['claimed', 'running', 'queued'].includes(state)),
    where: `status NOT IN ('queued', 'claimed', 'running')`,
    order: 'id DESC',
  },
];
const FINISHED = PARTS[2];

/**
 * The finished states few jobs end in, and the part that reads them by their partial index
 * (`jobs_rare_finishes`, migration 0039), newest first: a list of only those never walks the
 * finished jobs. The predicate is the index's, word for word, so both planners may use it.
 */
const RARE: readonly JobState[] = ['oom_killed', 'escalated'];
const RARE_PART: JobListPart = { where: `status IN ('oom_killed', 'escalated')`, order: 'id DESC' };

/** The finished part, or the rare one when every finished state asked for is rare. */
function finishedPart(statuses: readonly JobState[] | undefined): JobListPart | undefined {
  if (FINISHED === undefined) return undefined;
  if (statuses === undefined) return FINISHED;
  const finished = statuses.filter((state) => FINISHED.holds.includes(state));
  if (finished.length === 0) return undefined;
  return finished.every((state) => RARE.includes(state)) ? RARE_PART : FINISHED;
}

/**
 * The parts a list of these states reads (all of them without a filter): a part no wanted state
 * is in is left out of the statement, so that a list of queued jobs never walks the finished ones.
 * With `before` (the engine's placeholder for jobs.list's `before` id): the finished part alone,
 * its jobs older than that id, its index walked back from it (the next page of `queue list`).
 */
export function jobListParts(
  statuses: readonly JobState[] | undefined,
  before?: string,
): readonly JobListPart[] {
  const live = PARTS.filter(
    (part) =>
      part !== FINISHED && (statuses === undefined || part.holds.some((state) => statuses.includes(state))),
  );
  const finished = finishedPart(statuses);
  const last = finished === undefined ? [] : [finished];
  if (before === undefined) return [...live, ...last];
  return last.map((part) => ({ ...part, where: `${part.where} AND id < ${before}` }));
}
