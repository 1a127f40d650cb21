/**
 * An operator's force-release on PostgreSQL (store.ts, claims.forceRelease): one transaction
 * locks the task's run (claimed or running) and then its live claim, in escalate's order
 * (lifecycle.ts), and one statement ends the claim, frees the task, cancels the run, releases
 * its lock unless it was running, and writes the ledger rows, `claim:force_released` first.
 * A heartbeat, release or effect of the old holder waits on the claim row's lock and then finds
 * it released: fenced.
 */
import { assert } from '../../core/assert.js';
import { NotFoundError } from '../../core/errors.js';
import type { JobState } from '../../core/job.js';
import type { ClaimForceReleaseParams, ClaimForceReleaseResult } from '../store.js';
import { deleteLocks, insertAuditRows, lockReleasedRows } from './locks.js';
import { NOW, hostOf } from './rows.js';
import type { Querier } from './executor.js';

interface LiveRow {
  id: number;
  task_id: number;
  session_id: number;
  epoch: number;
  claimed_at: Date;
  host: string;
}

export async function forceRelease(
  querier: Querier,
  params: ClaimForceReleaseParams,
): Promise<ClaimForceReleaseResult> {
  const [task] = await querier.rows<{ id: number }>('SELECT id FROM tasks WHERE key = $1::text', [
    params.key,
  ]);
  if (task === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
  const [job] = await querier.rows<{ id: number; status: JobState }>(
    `SELECT id, status FROM jobs WHERE task_id = $1::bigint AND status IN ('claimed', 'running') FOR UPDATE`,
    [task.id],
  );
  const [live] = await querier.rows<LiveRow>(
    `SELECT c.id, c.task_id, c.session_id, c.epoch, c.claimed_at, s.host
     FROM claims c JOIN sessions s ON s.id = c.session_id
     WHERE c.task_id = $1::bigint AND c.released_at IS NULL FOR UPDATE OF c`,
    [task.id],
  );
  if (live === undefined) return { ok: false, reason: 'no_claim' };
  const [row] = await querier.rows<{ released: boolean }>(FORCE_RELEASE, [
    live.id,
    job?.id ?? null,
    job?.status ?? null,
    params.by.name,
    params.by.session ?? null,
    params.reason,
    `force-released by ${params.by.name}: ${params.reason}`,
  ]);
  assert(row?.released === true, 'the locked live claim is the one released');
  const holder = {
    session: live.session_id,
    host: live.host,
    since: live.claimed_at.getTime(),
    epoch: live.epoch,
  };
  return { ok: true, holder, job: job === undefined ? null : { id: job.id, was: job.status } };
}

/**
 * On rows the transaction has locked: $1 the live claim, $2 the run (or NULL) and $3 the status
 * it had, $4 who (text) and $5 their session, $6 why, $7 the run's reason.
 */
const FORCE_RELEASE = `WITH c AS (
  UPDATE claims SET released_at = ${NOW}, outcome = 'released'
  WHERE id = $1::bigint AND released_at IS NULL
  RETURNING task_id, session_id, epoch, released_at
), t AS (
  UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL FROM c
  WHERE tasks.id = c.task_id AND tasks.epoch = c.epoch
  RETURNING tasks.key
), j AS (
  UPDATE jobs SET status = 'cancelled', finished_at = c.released_at, reason = $7::text FROM c
  WHERE jobs.id = $2::bigint AND jobs.status = $3::text
  RETURNING jobs.id, jobs.epoch, jobs.finished_at, $3::text AS was
), ${deleteLocks('k', `workspace_locks.job_id = j.id AND j.was <> 'running'`, 'j')}, a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, c.released_at AS at, 'claim:force_released'::text AS type,
      t.key AS task_key, NULL::bigint AS job_id, c.session_id, ${hostOf('c.session_id')} AS host, c.epoch,
      jsonb_build_object('by', $4::text, 'bySession', $5::bigint, 'reason', $6::text, 'epoch', c.epoch,
        'jobId', $2::bigint) AS detail
    FROM c, t
    UNION ALL
    SELECT 1, '', j.finished_at, 'job:cancelled', t.key, j.id, $5::bigint, ${hostOf('$5::bigint')}, j.epoch,
      jsonb_build_object('reason', $7::text)
    FROM j, t
    UNION ALL
    ${lockReleasedRows(2, 'k', 'j.finished_at', `'released'`, 'j')}`)}
)
SELECT (SELECT count(*) FROM c) = 1 AS released`;
