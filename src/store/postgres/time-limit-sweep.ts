/**
 * progress.sweepTimedOut on PostgreSQL (progress-store.ts; decision 0037, "The leader's sweep"):
 * the running jobs past their own time limit that no runner runs, read through the partial index
 * of running jobs with a limit (migration 0043). A plain read first (nothing is written when none
 * is due); then one READ COMMITTED transaction for the batch: each job locked FOR UPDATE, judged
 * again and audited once per epoch (run-limit.ts's statements), then failed by jobs.finish's own
 * statement, all committed together.
 */
import type { Job } from '../../core/job.js';
import type { TimeLimitSweepParams, TimeLimitSweepResult } from '../progress-store.js';
import { sweptReason } from '../time-limit-reason.js';
import type { PgExecutor, Querier } from './executor.js';
import { SWEPT_FINISH_SQL, finishValues } from './jobs.js';
import { NOW, msInterval, toJob, type JobRow } from './rows.js';
import { lockAndMark } from './run-limit.js';

/**
 * Running jobs past their own limit taken in pull mode, oldest start first: no dispatcher term,
 * whatever the kind of the session that took them, as a placed job (a term) is its runner's to
 * judge and kill (decision 0037, "The sweep's loose ends"); not a job an enqueue handed to a
 * waiting `job next --wait` that has not taken it (decision 0024: its next claim takes it back
 * under a new epoch, or the rescue requeues it).
 */
export const DUE_SQL = `
SELECT jobs.id, jobs.session_id, jobs.epoch FROM jobs
WHERE jobs.status = 'running' AND jobs.time_limit_ms IS NOT NULL
  AND jobs.started_at <= ${NOW} - ${msInterval('jobs.time_limit_ms')}
  AND jobs.term IS NULL AND (jobs.lease_until IS NULL OR jobs.lease_until > ${NOW})
  AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = jobs.session_id AND s.handed_job = jobs.id)
ORDER BY jobs.started_at, jobs.id LIMIT $1::int`;

/**
 * The batch's jobs locked before anything else, in id order, passing over those a worker's finish
 * or batch holds now (they are judged by that finish, or at the next pass): the sweep never waits
 * for a job's lock while holding another's, so it cannot deadlock with a worker's batch.
 */
const LOCK_FREE = 'SELECT id FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE SKIP LOCKED';

interface DueRow {
  id: string | number;
  session_id: string | number;
  epoch: string | number;
}

/** Thrown inside the transaction to roll the batch back: a failing finish did not match. */
class SweepLost extends Error {}

export async function sweepTimedOut(
  exec: PgExecutor,
  params: TimeLimitSweepParams,
): Promise<TimeLimitSweepResult> {
  const by = { by: 'leader', bySession: params.leaderSession } as const;
  const due = await exec.rows<DueRow>(DUE_SQL, [params.max]);
  if (due.length === 0) return { failed: [] };
  return exec.transaction(async (querier: Querier) => {
    const failed: Job[] = [];
    const free = await querier.rows<{ id: string | number }>(LOCK_FREE, [due.map((row) => Number(row.id))]);
    const locked = new Set(free.map((row) => Number(row.id)));
    for (const row of due.filter((candidate) => locked.has(Number(candidate.id)))) {
      const guard = { id: Number(row.id), session: Number(row.session_id), epoch: Number(row.epoch) };
      const verdict = await lockAndMark(querier, [guard.id, guard.session, guard.epoch, null], by);
      if (!verdict.timedOut) continue;
      const reason = sweptReason(verdict.startedAt, verdict.limitMs);
      const failing = { ...guard, status: 'failed' as const, exitCode: null, reason };
      const [finished] = await querier.rows<JobRow>(SWEPT_FINISH_SQL, [
        ...finishValues(failing),
        params.leaderSession,
      ]);
      if (finished === undefined) throw new SweepLost(`job ${guard.id}: its failing finish did not match`);
      failed.push(toJob(finished));
    }
    return { failed };
  });
}
