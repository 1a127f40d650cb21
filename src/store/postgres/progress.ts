/**
 * Progress marks and stalls on PostgreSQL, each one statement. A mark locks its session FOR KEY
 * SHARE and its record FOR UPDATE before updating it (the locked subquery reads the newest
 * version, so of two marks racing on a stalled record exactly one sees the stall and writes the
 * `job:unstalled` row); a first mark inserts the record, and a concurrent first insert is retried
 * as a unique violation. A stall locks the job FOR SHARE (a finish waits for it, or it sees the
 * finish and does nothing) and the record FOR UPDATE, and reads the clock once.
 */
import { NotFoundError } from '../../core/errors.js';
import { PROGRESS_COUNTERS, validateProgressMark, type Progress } from '../../core/progress.js';
import type { ProgressStore, StallResult } from '../progress-store.js';
import type * as shared from '../run-rows.js';
import { progressOf } from '../run-rows.js';
import { NOW, PG, hostOf, ms, msInterval, type PgEncoding } from './rows.js';
import type { PgExecutor } from './executor.js';
import { failTimedOut, markTimedOut } from './run-limit.js';
import { sweepTimedOut } from './time-limit-sweep.js';

type ProgressRow = shared.ProgressRow<PgEncoding>;
const toProgress = (row: ProgressRow): Progress => progressOf(PG, row);

const COLUMNS =
  'session_id, output_bytes, files_changed, commits, effects, tool_calls, last_at, note, stalled_at';
const msOf = (expr: string): string => `floor(extract(epoch FROM ${expr}) * 1000)::bigint`;

const MARK_SQL = `
WITH s AS (
  SELECT id FROM sessions WHERE id = $1::bigint AND state = 'live' FOR KEY SHARE
), clock AS (
  SELECT ${NOW} AS now
), old AS (
  SELECT p.session_id, p.stalled_at FROM progress p JOIN s ON s.id = p.session_id FOR UPDATE OF p
), upd AS (
  UPDATE progress p SET
    output_bytes = p.output_bytes + $2::bigint, files_changed = p.files_changed + $3::bigint,
    commits = p.commits + $4::bigint, effects = p.effects + $5::bigint, tool_calls = p.tool_calls + $6::bigint,
    last_at = clock.now, note = coalesce($7::text, p.note), stalled_at = NULL
  FROM old, clock WHERE p.session_id = old.session_id
  RETURNING ${COLUMNS.split(', ')
    .map((column) => `p.${column}`)
    .join(', ')}, old.stalled_at AS was_stalled
), ins AS (
  INSERT INTO progress (session_id, output_bytes, files_changed, commits, effects, tool_calls, last_at, note)
  SELECT s.id, $2::bigint, $3::bigint, $4::bigint, $5::bigint, $6::bigint, clock.now, $7::text
  FROM s, clock WHERE NOT EXISTS (SELECT 1 FROM old)
  RETURNING ${COLUMNS}, NULL::timestamptz AS was_stalled
), r AS (
  SELECT * FROM upd UNION ALL SELECT * FROM ins
), j AS (
  SELECT jobs.id, jobs.epoch, tasks.key, r.was_stalled, r.last_at
  FROM r JOIN jobs ON jobs.agent_session_id = r.session_id AND jobs.status = 'running'
  JOIN tasks ON tasks.id = jobs.task_id
  WHERE r.was_stalled IS NOT NULL
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT j.last_at, 'job:unstalled', j.key, j.id, $1::bigint, ${hostOf('$1::bigint')}, j.epoch,
    jsonb_build_object('stalledAt', ${msOf('j.was_stalled')}, 'note', $7::text)
  FROM j
)
SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1::bigint) AS known, (SELECT id FROM j) AS unstalled, r.*
FROM (SELECT 1) one LEFT JOIN r ON true`;

const STALL_SQL = `
WITH j AS (
  SELECT jobs.id, jobs.epoch, jobs.started_at, jobs.agent_session_id, tasks.key
  FROM jobs JOIN tasks ON tasks.id = jobs.task_id
  WHERE jobs.id = $1::bigint AND jobs.session_id = $2::bigint AND jobs.epoch = $3::bigint
    AND jobs.status = 'running' AND jobs.agent_session_id IS NOT NULL
  FOR SHARE OF jobs
), clock AS (
  SELECT ${NOW} AS now
), old AS (
  SELECT p.session_id, p.last_at, p.stalled_at FROM progress p JOIN j ON p.session_id = j.agent_session_id
  FOR UPDATE OF p
), due AS (
  SELECT j.*, greatest(j.started_at, coalesce(old.last_at, j.started_at)) AS last, clock.now
  FROM j CROSS JOIN clock LEFT JOIN old ON true
  WHERE old.stalled_at IS NULL
    AND greatest(j.started_at, coalesce(old.last_at, j.started_at)) <= clock.now - ${msInterval('$4')}
), upd AS (
  UPDATE progress p SET stalled_at = due.now FROM due WHERE p.session_id = due.agent_session_id
  RETURNING p.session_id
), ins AS (
  INSERT INTO progress (session_id, stalled_at)
  SELECT agent_session_id, now FROM due WHERE NOT EXISTS (SELECT 1 FROM old)
  RETURNING session_id
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT due.now, 'job:stalled', due.key, due.id, $2::bigint, ${hostOf('$2::bigint')}, due.epoch,
    jsonb_build_object('agentSession', due.agent_session_id, 'lastProgressAt', ${msOf('due.last')},
      'stallAfterMs', $4::bigint)
  FROM due
)
SELECT EXISTS (SELECT 1 FROM j) AS running, EXISTS (SELECT 1 FROM old WHERE stalled_at IS NOT NULL) AS already,
  (SELECT last FROM due) AS last`;

export function postgresProgress(exec: PgExecutor): ProgressStore['progress'] {
  return {
    mark: async (params) => {
      const mark = validateProgressMark(params);
      const values = [params.session, ...PROGRESS_COUNTERS.map((counter) => mark[counter]), mark.note];
      const row = await exec.one<
        { known: boolean; unstalled: number | null } & { [K in keyof ProgressRow]: ProgressRow[K] | null }
      >(MARK_SQL, values);
      if (row === undefined || !row.known) {
        throw new NotFoundError('session', String(params.session), 'start one with `baton session start`');
      }
      if (row.session_id === null) return { ok: false, reason: 'fenced' };
      return { ok: true, progress: toProgress(row as ProgressRow), unstalled: row.unstalled };
    },
    get: async (session) => {
      const row = await exec.one<ProgressRow>(
        `SELECT ${COLUMNS} FROM progress WHERE session_id = $1::bigint`,
        [session],
      );
      return row === undefined ? null : toProgress(row);
    },
    list: async (sessions) =>
      sessions.length === 0
        ? []
        : (
            await exec.rows<ProgressRow>(
              `SELECT ${COLUMNS} FROM progress WHERE session_id = ANY ($1::bigint[])`,
              [sessions],
            )
          ).map(toProgress),
    markStalled: async (params): Promise<StallResult> => {
      const row = await exec.one<{ running: boolean; already: boolean; last: Date | null }>(STALL_SQL, [
        params.id,
        params.session,
        params.epoch,
        params.stallAfterMs,
      ]);
      if (row === undefined || !row.running) return { stalled: false, reason: 'lost' };
      if (row.last !== null) return { stalled: true, lastProgressAt: ms(row.last) };
      return { stalled: false, reason: row.already ? 'already' : 'progressing' };
    },
    markTimedOut: (params) => markTimedOut(exec, params),
    failTimedOut: (params) => failTimedOut(exec, params),
    sweepTimedOut: (params) => sweepTimedOut(exec, params),
  };
}
