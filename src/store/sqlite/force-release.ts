/**
 * An operator's force-release on SQLite (store.ts, claims.forceRelease): one BEGIN IMMEDIATE
 * transaction reads the task's live claim and its run, ends the claim, cancels the run and
 * writes `claim:force_released` with who, why and the fenced epoch. The single writer means the
 * holder cannot slip a write in between; afterwards its (session, epoch) matches no live claim,
 * so each of its writes is fenced.
 */
import { NotFoundError } from '../../core/errors.js';
import type { JobState } from '../../core/job.js';
import type { ClaimForceReleaseParams, ClaimForceReleaseResult } from '../store.js';
import { releaseJobLocks } from './locks.js';
import { appendAudit } from './rows.js';
import type { SqliteExecutor } from './executor.js';
import { taskRow } from './tasks-claims.js';

interface LiveRow {
  id: number;
  session_id: number;
  epoch: number;
  claimed_at: number;
  host: string;
}

export function forceRelease(exec: SqliteExecutor, params: ClaimForceReleaseParams): ClaimForceReleaseResult {
  const task = taskRow(exec, params.key);
  if (task === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
  const live = exec
    .prepare(
      `SELECT c.id, c.session_id, c.epoch, c.claimed_at, s.host FROM claims c
       JOIN sessions s ON s.id = c.session_id WHERE c.task_id = ? AND c.released_at IS NULL`,
    )
    .get(task.id) as LiveRow | undefined;
  if (live === undefined) return { ok: false, reason: 'no_claim' };
  const now = exec.now();
  exec.prepare(`UPDATE claims SET released_at = ?, outcome = 'released' WHERE id = ?`).run(now, live.id);
  exec.prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ?').run(task.id);
  const job = exec
    .prepare(`SELECT id, status, epoch FROM jobs WHERE task_id = ? AND status IN ('claimed', 'running')`)
    .get(task.id) as { id: number; status: JobState; epoch: number } | undefined;
  appendAudit(exec, {
    at: now,
    type: 'claim:force_released',
    key: params.key,
    session: live.session_id,
    epoch: live.epoch,
    detail: {
      by: params.by.name,
      bySession: params.by.session ?? null,
      reason: params.reason,
      epoch: live.epoch,
      jobId: job?.id ?? null,
    },
  });
  if (job !== undefined) {
    const reason = `force-released by ${params.by.name}: ${params.reason}`;
    exec
      .prepare(
        `UPDATE jobs SET status = 'cancelled', finished_at = ?, reason = ? WHERE id = ? AND status = ?`,
      )
      .run(now, reason, job.id, job.status);
    appendAudit(exec, {
      at: now,
      type: 'job:cancelled',
      key: params.key,
      jobId: job.id,
      session: params.by.session ?? null,
      epoch: job.epoch,
      detail: { reason },
    });
    // A running agent may still be at work: its runner releases the lock once the tree is dead.
    if (job.status !== 'running') releaseJobLocks(exec, now, job.id, 'released');
  }
  const holder = { session: live.session_id, host: live.host, since: live.claimed_at, epoch: live.epoch };
  return { ok: true, holder, job: job === undefined ? null : { id: job.id, was: job.status } };
}
