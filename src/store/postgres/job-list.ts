/** jobs.list on PostgreSQL: the live states by their partial indexes, the finished newest first (store/job-list.ts). */
import type { Job } from '../../core/job.js';
import type { JobListParams } from '../store.js';
import { JOB_LIST_ORDER, jobListParts } from '../job-list.js';
import type { PgExecutor } from './executor.js';
import { jobColumns, toJob, type JobRow } from './rows.js';

const WANTED = '($1::text[] IS NULL OR status = ANY ($1::text[]))';

/** One task's jobs: few, read by `jobs_by_task` and sorted (with $4, its finished ones older). */
const BY_KEY = `SELECT ${jobColumns('jobs')} FROM jobs
  WHERE task_id = (SELECT id FROM tasks WHERE key = $2::text) AND ${WANTED}
    AND ($4::bigint IS NULL OR (status NOT IN ('queued', 'claimed', 'running') AND id < $4::bigint))
  ORDER BY ${JOB_LIST_ORDER} LIMIT $3::int`;

/**
 * Every task's: each part stops at the limit; the claimed and running jobs come through
 * `jobs_active`, the queued through `jobs_queue` in queue order, the finished by `jobs_pkey`
 * walked back (a status filter that matches few finished jobs walks further).
 */
export function allJobsSql(params: JobListParams): string {
  const parts = jobListParts(params.status, params.before === undefined ? undefined : '$3::bigint').map(
    (part) => `(SELECT ${jobColumns('jobs')} FROM jobs WHERE ${part.where} AND ${WANTED}
      ORDER BY ${part.order} LIMIT $2::int)`,
  );
  return `SELECT * FROM (${parts.join(' UNION ALL ')}) u ORDER BY ${JOB_LIST_ORDER} LIMIT $2::int`;
}

export async function listJobs(exec: PgExecutor, params: JobListParams): Promise<Job[]> {
  // No state asked for, or only live ones before an id: no part to read.
  if (jobListParts(params.status, params.before === undefined ? undefined : '$3').length === 0) return [];
  const statuses = params.status === undefined ? null : [...params.status];
  const limit = params.limit ?? 1000;
  const rows =
    params.key === undefined
      ? await exec.rows<JobRow>(allJobsSql(params), [
          statuses,
          limit,
          ...(params.before === undefined ? [] : [params.before]),
        ])
      : await exec.rows<JobRow>(BY_KEY, [statuses, params.key, limit, params.before ?? null]);
  return rows.map(toJob);
}
