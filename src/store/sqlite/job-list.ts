/** jobs.list on SQLite: the live states by their partial indexes, the finished newest first (store/job-list.ts). */
import type { Job } from '../../core/job.js';
import type { JobListParams } from '../store.js';
import { JOB_LIST_ORDER, jobListParts } from '../job-list.js';
import { toJob, type JobRow } from './rows.js';
import type { SqliteExecutor } from './executor.js';

const JOB_SELECT = 'SELECT j.*, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id';
const WANTED = (status: string): string =>
  `(@statuses IS NULL OR ${status} IN (SELECT value FROM json_each(@statuses)))`;

/** One task's jobs: few, read by `jobs_by_task` and sorted (with @before, its finished ones older). */
const BY_KEY = `SELECT * FROM (${JOB_SELECT} WHERE t.key = @key AND ${WANTED('j.status')}
    AND (@before IS NULL OR (j.status NOT IN ('queued', 'claimed', 'running') AND j.id < @before)))
  ORDER BY ${JOB_LIST_ORDER} LIMIT @limit`;

/**
 * Every task's: each part stops at the limit; the claimed and running jobs come through
 * `jobs_active_by_host`, the queued through `jobs_queue` in queue order, the finished by the rowid
 * walked back (a status filter that matches few finished jobs walks further).
 */
export function allJobsSql(params: JobListParams): string {
  const parts = jobListParts(params.status, params.before === undefined ? undefined : '@before').map(
    (part) =>
      `SELECT * FROM (SELECT * FROM jobs WHERE ${part.where} AND ${WANTED('status')}
        ORDER BY ${part.order} LIMIT @limit)`,
  );
  return `SELECT u.*, (SELECT key FROM tasks WHERE id = u.task_id) AS key FROM (${parts.join(' UNION ALL ')}) u
    ORDER BY ${JOB_LIST_ORDER} LIMIT @limit`;
}

export function listJobsIn(exec: SqliteExecutor, params: JobListParams): Job[] {
  // No state asked for, or only live ones before an id: no part to read.
  if (jobListParts(params.status, params.before === undefined ? undefined : '@before').length === 0)
    return [];
  const statuses = params.status === undefined ? null : JSON.stringify(params.status);
  const limit = params.limit ?? 1000;
  const before = params.before ?? null;
  const rows = (
    params.key === undefined
      ? exec.prepare(allJobsSql(params)).all({ statuses, limit, ...(before === null ? {} : { before }) })
      : exec.prepare(BY_KEY).all({ statuses, key: params.key, limit, before })
  ) as JobRow[];
  return rows.map(toJob);
}
