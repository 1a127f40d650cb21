/**
 * Progress marks and stalls on SQLite: each mark and each stall is one BEGIN IMMEDIATE
 * transaction, so a mark and a stall of the same session never interleave. A stall check that is
 * not due (the common case, asked every heartbeat) is answered by a read and takes no write lock.
 */
import { PROGRESS_COUNTERS, validateProgressMark, type Progress } from '../../core/progress.js';
import type { ProgressStore, StallResult } from '../progress-store.js';
import type * as shared from '../run-rows.js';
import { progressOf } from '../run-rows.js';
import { SQLITE, appendAudit, type SqliteEncoding } from './rows.js';
import { fromSync, type SqliteExecutor } from './executor.js';
import { sessionRow } from './tasks-claims.js';
import { failTimedOut, markTimedOut } from './run-limit.js';
import { sweepTimedOut } from './time-limit-sweep.js';

type ProgressRow = shared.ProgressRow<SqliteEncoding>;
const toProgress = (row: ProgressRow): Progress => progressOf(SQLITE, row);

interface StallRow {
  job_id: number;
  key: string;
  agent_session_id: number;
  started_at: number;
  last_at: number | null;
  stalled_at: number | null;
}

/** The session's progress record; undefined before its first mark or stall. */
function progressRow(exec: SqliteExecutor, session: number): ProgressRow | undefined {
  return exec.prepare('SELECT * FROM progress WHERE session_id = ?').get(session) as ProgressRow | undefined;
}

/** The running job (under the runner's guard) and its agent session's record. */
function stallRow(
  exec: SqliteExecutor,
  params: { id: number; session: number; epoch: number },
): StallRow | undefined {
  return exec
    .prepare(
      `SELECT j.id AS job_id, t.key, j.agent_session_id, j.started_at, p.last_at, p.stalled_at
         FROM jobs j JOIN tasks t ON t.id = j.task_id
         LEFT JOIN progress p ON p.session_id = j.agent_session_id
         WHERE j.id = ? AND j.session_id = ? AND j.epoch = ? AND j.status = 'running'
           AND j.agent_session_id IS NOT NULL`,
    )
    .get(params.id, params.session, params.epoch) as StallRow | undefined;
}

/** Whether the job's agent has made no progress for `stallAfterMs`, and if not, why not. */
function judge(row: StallRow | undefined, now: number, stallAfterMs: number): StallResult {
  if (row === undefined) return { stalled: false, reason: 'lost' };
  if (row.stalled_at !== null) return { stalled: false, reason: 'already' };
  const last = Math.max(row.started_at, row.last_at ?? row.started_at);
  if (last > now - stallAfterMs) return { stalled: false, reason: 'progressing' };
  return { stalled: true, lastProgressAt: last };
}

export function sqliteProgress(exec: SqliteExecutor): ProgressStore['progress'] {
  return fromSync<ProgressStore['progress']>({
    mark: (params) => markProgress(exec, params),
    get: (session) => {
      const row = exec.read(() => progressRow(exec, session));
      return row === undefined ? null : toProgress(row);
    },
    list: (sessions) =>
      sessions.length === 0
        ? []
        : exec.read(() =>
            (
              exec
                .prepare(`SELECT * FROM progress WHERE session_id IN (SELECT value FROM json_each(?))`)
                .all(JSON.stringify(sessions)) as ProgressRow[]
            ).map(toProgress),
          ),
    markStalled: (params) => markStalled(exec, params),
    markTimedOut: (params) => markTimedOut(exec, params),
    failTimedOut: (params) => failTimedOut(exec, params),
    sweepTimedOut: (params) => sweepTimedOut(exec, params),
  });
}

/** progress.mark: adds to the session's counters in one write; a stalled job's mark unstalls it. */
function markProgress(
  exec: SqliteExecutor,
  params: Parameters<ProgressStore['progress']['mark']>[0],
): Awaited<ReturnType<ProgressStore['progress']['mark']>> {
  const mark = validateProgressMark(params);
  return exec.write(() => {
    if (sessionRow(exec, params.session, false).state !== 'live')
      return { ok: false, reason: 'fenced' } as const;
    const now = exec.now();
    const wasStalled = progressRow(exec, params.session)?.stalled_at ?? null;
    const row = exec
      .prepare(
        `INSERT INTO progress (session_id, output_bytes, files_changed, commits, effects, tool_calls,
               last_at, note)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (session_id) DO UPDATE SET
               output_bytes = output_bytes + excluded.output_bytes,
               files_changed = files_changed + excluded.files_changed,
               commits = commits + excluded.commits,
               effects = effects + excluded.effects,
               tool_calls = tool_calls + excluded.tool_calls,
               last_at = excluded.last_at,
               note = coalesce(excluded.note, note),
               stalled_at = NULL
             RETURNING *`,
      )
      .get(
        params.session,
        ...PROGRESS_COUNTERS.map((counter) => mark[counter]),
        now,
        mark.note,
      ) as ProgressRow;
    let unstalled: number | null = null;
    if (wasStalled !== null) {
      const job = exec
        .prepare(
          `SELECT j.id, t.key, j.epoch FROM jobs j JOIN tasks t ON t.id = j.task_id
               WHERE j.agent_session_id = ? AND j.status = 'running'`,
        )
        .get(params.session) as { id: number; key: string; epoch: number } | undefined;
      if (job !== undefined) {
        unstalled = job.id;
        appendAudit(exec, {
          at: now,
          type: 'job:unstalled',
          key: job.key,
          jobId: job.id,
          session: params.session,
          epoch: job.epoch,
          detail: { stalledAt: wasStalled, note: mark.note },
        });
      }
    }
    return { ok: true, progress: toProgress(row), unstalled } as const;
  });
}

/** progress.markStalled: judged by a read first, so a check that is not due takes no write lock. */
function markStalled(
  exec: SqliteExecutor,
  params: Parameters<ProgressStore['progress']['markStalled']>[0],
): StallResult {
  const first = exec.read(() => judge(stallRow(exec, params), exec.now(), params.stallAfterMs));
  if (!first.stalled) return first;
  return exec.write((): StallResult => {
    const now = exec.now();
    const row = stallRow(exec, params);
    const verdict = judge(row, now, params.stallAfterMs);
    if (!verdict.stalled || row === undefined) return verdict;
    exec
      .prepare(
        `INSERT INTO progress (session_id, stalled_at) VALUES (?, ?)
             ON CONFLICT (session_id) DO UPDATE SET stalled_at = excluded.stalled_at`,
      )
      .run(row.agent_session_id, now);
    appendAudit(exec, {
      at: now,
      type: 'job:stalled',
      key: row.key,
      jobId: row.job_id,
      session: params.session,
      epoch: params.epoch,
      detail: {
        agentSession: row.agent_session_id,
        lastProgressAt: verdict.lastProgressAt,
        stallAfterMs: params.stallAfterMs,
      },
    });
    return verdict;
  });
}
