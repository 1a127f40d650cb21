/**
 * jobs.finishAndClaimNext on PostgreSQL, for many workers at once. Calls that arrive while the
 * engine's earlier ones are in flight are gathered into one statement (a Batcher), so workers
 * sharing a pool share a commit, a round trip and an executor start, while each request keeps
 * its own guards, answers and audit rows, exactly as if it had run alone:
 *  - `req` holds the requests with their position `ord`; `seen` their sessions, read unlocked.
 *  - `f` finishes each request's job, guarded by (session, epoch, status) and a live session;
 *    `k` deletes the finished jobs' workspace locks.
 *  - `next` locks as many queued jobs as there are live requests (FOR UPDATE SKIP LOCKED, queue
 *    order); `s` locks their sessions FOR KEY SHARE (serialising with sessions.end, as in
 *    claimNext), and `pairs` hands the n-th best job to the n-th live request.
 *  - `j` claims them (started when asked); `a` writes every audit row in one ordered insert,
 *    request by request: the finish, its lock releases, the claim, the start.
 * The answer has one row per request (its session's state) and one per finished or claimed job.
 */
import type { JobFinishAndClaimNextParams } from '../store.js';
import { NOW, hostOf, jobColumns, jobFields, type JobRow } from './rows.js';
import { insertAuditRows, keyOfJob } from './locks.js';

export const FINISH_AND_CLAIM_MANY = `WITH req AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::text[],
    $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
    AS r (id, session, epoch, status, exit_code, reason, tail, host, start, ord)
), seen AS (
  SELECT req.ord, sessions.state FROM req LEFT JOIN sessions ON sessions.id = req.session
), live AS (
  SELECT req.*, row_number() OVER (ORDER BY req.ord) AS rank
  FROM req JOIN seen ON seen.ord = req.ord WHERE seen.state = 'live'
), f AS (
  UPDATE jobs SET status = live.status, finished_at = ${NOW}, exit_code = live.exit_code,
    reason = live.reason, output_tail = live.tail
  FROM live
  WHERE jobs.id = live.id AND jobs.session_id = live.session AND jobs.epoch = live.epoch
    AND (jobs.status = 'running' OR (jobs.status = 'claimed' AND live.status IN ('failed', 'cancelled')))
  RETURNING ${jobColumns('jobs')}, live.ord, live.session AS by_session, live.exit_code AS by_exit
), k AS (
  DELETE FROM workspace_locks USING f WHERE workspace_locks.job_id = f.id
  RETURNING workspace_locks.workspace, workspace_locks.job_id, workspace_locks.session_id,
    workspace_locks.epoch, f.ord, f.finished_at
), locked AS (
  SELECT id, priority, queued_at FROM jobs
  WHERE status = 'queued' AND run_after <= ${NOW} AND EXISTS (SELECT 1 FROM live)
  ORDER BY priority, queued_at, id
  LIMIT (SELECT count(*) FROM live)
  FOR UPDATE SKIP LOCKED
), next AS (
  SELECT id, row_number() OVER (ORDER BY priority, queued_at, id) AS rank FROM locked
), s AS (
  SELECT id, host, state FROM sessions
  WHERE id IN (SELECT session FROM live WHERE rank <= (SELECT count(*) FROM next))
  FOR KEY SHARE
), t AS (
  SELECT ${NOW} AS now
), pairs AS (
  SELECT next.id, live.ord, live.start, s.id AS session, coalesce(live.host, s.host) AS host,
    s.host AS session_host
  FROM next JOIN live ON live.rank = next.rank JOIN s ON s.id = live.session
  WHERE s.state = 'live'
), j AS (
  UPDATE jobs SET status = CASE WHEN pairs.start THEN 'running' ELSE 'claimed' END,
    epoch = jobs.epoch + 1, attempt = jobs.attempt + 1,
    session_id = pairs.session, host = pairs.host, claimed_at = t.now,
    started_at = CASE WHEN pairs.start THEN t.now END, reason = NULL, term = NULL
  FROM pairs, t
  WHERE jobs.id = pairs.id AND jobs.status = 'queued'
  RETURNING ${jobColumns('jobs')}, pairs.ord, pairs.start, pairs.session_host
), a AS (
  ${insertAuditRows(`
    SELECT f.ord * 4 AS part, ''::text AS seq, f.finished_at AS at, 'job:finished'::text AS type,
      f.key AS task_key, f.id AS job_id, f.by_session AS session_id, ${hostOf('f.by_session')} AS host,
      f.epoch, jsonb_build_object('status', f.status, 'exitCode', f.by_exit) AS detail
    FROM f
    UNION ALL
    SELECT k.ord * 4 + 1, k.workspace::text, k.finished_at, 'lock:released', ${keyOfJob('k.job_id')},
      k.job_id, k.session_id, ${hostOf('k.session_id')}, k.epoch,
      jsonb_build_object('workspace', k.workspace, 'outcome', 'released')
    FROM k
    UNION ALL
    SELECT j.ord * 4 + 2 + x.part, '', x.at, x.type, j.key, j.id, j.session_id, j.session_host,
      j.epoch, x.detail
    FROM j CROSS JOIN LATERAL (
      VALUES
        (0, j.claimed_at, 'job:claimed'::text, jsonb_build_object('attempt', j.attempt, 'host', j.host)),
        (1, j.started_at, 'job:started'::text, '{}'::jsonb)
    ) x (part, at, type, detail)
    WHERE x.part = 0 OR j.start`)}
)
SELECT seen.ord, seen.state AS session_state, x.*
FROM seen LEFT JOIN (
  SELECT 'f' AS step, f.ord AS step_ord, ${jobFields('f')}, f.key FROM f
  UNION ALL
  SELECT 'j', j.ord, ${jobFields('j')}, j.key FROM j
) x ON x.step_ord = seen.ord
ORDER BY seen.ord, x.step`;

/** One request's row of the answer: its session's state, and a job when `step` is 'f' or 'j'. */
export type BatchRow = Partial<JobRow> & { ord: string; session_state: string | null; step: 'f' | 'j' | null };

/** The statement's parameters for a batch of requests, column by column. */
export function batchParams(reqs: readonly JobFinishAndClaimNextParams[]): unknown[] {
  const col = <T>(f: (p: JobFinishAndClaimNextParams) => T): T[] => reqs.map(f);
  return [
    col((p) => p.id),
    col((p) => p.session),
    col((p) => p.epoch),
    col((p) => p.status),
    col((p) => p.exitCode ?? null),
    col((p) => p.reason ?? null),
    col((p) => p.outputTail ?? null),
    col((p) => p.host ?? null),
    col((p) => p.start === true),
  ];
}

/** The answer's rows grouped by request, in request order. */
export function rowsByRequest(rows: readonly BatchRow[], count: number): BatchRow[][] {
  const out: BatchRow[][] = Array.from({ length: count }, () => []);
  for (const r of rows) out[Number(r.ord) - 1]?.push(r);
  return out;
}
