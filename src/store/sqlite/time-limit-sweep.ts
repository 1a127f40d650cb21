/**
 * progress.sweepTimedOut on SQLite (progress-store.ts; decision 0037, "The leader's sweep"): the
 * running jobs past their own time limit that no runner runs, read through the partial index of
 * running jobs with a limit (migration 0043), so finished history is never read. A read first (no
 * write lock when none is due), then one write for the batch: each job judged again, audited once
 * per epoch (run-limit.ts) and failed as a finish past its limit is.
 */
import type { Job } from '../../core/job.js';
import type { TimedOutBy, TimeLimitSweepParams, TimeLimitSweepResult } from '../progress-store.js';
import { sweptReason } from '../time-limit-reason.js';
import type { SqliteExecutor } from './executor.js';
import { finishIn } from './job-steps.js';
import { judgeAndAudit } from './run-limit.js';

interface DueRow {
  id: number;
  session_id: number;
  epoch: number;
}

/**
 * Running jobs past their own limit taken in pull mode (through jobs_running_limited): no
 * dispatcher term, whatever the kind of the session that took them, as a placed job (a term) is
 * its runner's to judge and kill (decision 0037, "The sweep's loose ends"); not a job handed to a
 * waiting `job next --wait` not yet taken (decision 0024).
 */
export const DUE_JOBS = `SELECT j.id, j.session_id, j.epoch FROM jobs j
  WHERE j.status = 'running' AND j.time_limit_ms IS NOT NULL AND j.started_at + j.time_limit_ms <= ?
    AND j.term IS NULL AND (j.lease_until IS NULL OR j.lease_until > ?)
    AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = j.session_id AND s.handed_job = j.id)
  ORDER BY j.started_at, j.id LIMIT ?`;

/** DUE_JOBS at `now`, at most `max`. */
function dueJobs(exec: SqliteExecutor, now: number, max: number): DueRow[] {
  return exec.prepare(DUE_JOBS).all(now, now, max) as DueRow[];
}

/** Thrown inside the write to roll the batch back: a failing finish did not match its verdict. */
class SweepLost extends Error {}

export function sweepTimedOut(exec: SqliteExecutor, params: TimeLimitSweepParams): TimeLimitSweepResult {
  const by: TimedOutBy = { by: 'leader', bySession: params.leaderSession };
  const due = exec.read(() => dueJobs(exec, exec.now(), params.max));
  if (due.length === 0) return { failed: [] };
  return exec.write(() => {
    const now = exec.now();
    const failed: Job[] = [];
    for (const row of dueJobs(exec, now, params.max)) {
      const guard = { id: row.id, session: row.session_id, epoch: row.epoch };
      const verdict = judgeAndAudit(exec, { ...guard, defaultLimitMs: null }, now, by);
      if (!verdict.timedOut) continue;
      const reason = sweptReason(verdict.startedAt, verdict.limitMs);
      const finished = finishIn(exec, { ...guard, status: 'failed', exitCode: null, reason }, now, by);
      if (!finished.ok) throw new SweepLost(`job ${row.id}: its failing finish did not match`);
      failed.push(finished.job);
    }
    return { failed };
  });
}
