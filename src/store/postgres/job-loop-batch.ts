/**
 * jobs.finishAndClaimNext on PostgreSQL, for many workers at once. Calls that arrive while the
 * engine's earlier ones are in flight are gathered into one statement (a Batcher), so workers
 * sharing a pool share a commit, a round trip and an executor start, while each request keeps
 * its own guards, answers and audit rows, exactly as if it had run alone:
 *  - `req` holds the requests with their position `ord`; `s` locks their sessions FOR KEY SHARE,
 *    which serialises the statement with sessions.end (FOR UPDATE): an end that committed first is
 *    seen (READ COMMITTED re-reads a row it waited for) and refuses the request; an end that comes
 *    later waits, then finds the jobs this statement handed out. `live` numbers the requests whose
 *    session is live and whose job exists: one naming no job finishes and takes nothing (it
 *    answers NotFoundError, as on SQLite, whose transaction that error rolls back).
 *  - `f` finishes each live request's job, guarded by (session, epoch, status); `k` deletes the
 *    finished jobs' workspace locks; `ts` finishes the open task of each job that ended done
 *    (task-state.ts: to done, or in review). `f` and `j` join each job's task in the UPDATE itself for
 *    its key (the ledger's and the answer's), rather than in CTEs of their own: two plan nodes
 *    fewer, 2% of the statement's CPU (docs/decisions/0002, sixth round).
 *  - `n` takes as many queued jobs as there are live requests, in queue order, through
 *    baton_take_queued (migrations 0008 and 0009: FOR UPDATE SKIP LOCKED on a snapshot of its own,
 *    passing over jobs whose task is not open or waits behind a gate), and `j` hands the n-th to
 *    the n-th live request (started when asked).
 *  - `a` writes every audit row in one ordered insert, request by request: the finish (with its
 *    task's move, decision 0023), its lock releases, the claim (started or not).
 * Every CTE here is a plan node PostgreSQL initialises on each run, so the statement keeps few:
 * its fixed cost, paid once per batch, is what batching amortises (docs/decisions/0002).
 * The answer has one row per request (its session's state) and one per finished or claimed job.
 */
import type { JobFinishAndClaimNextParams } from '../store.js';
import { NOW, claimedDetail, hostOf, jobFields, type JobRow } from './rows.js';
import { insertAuditRows, keyOfJob } from './locks.js';
import { FINISH_TASK_STEP, FINISHED_REASON_JSON, FINISHED_TASK_JSON } from './task-state.js';
import { finishGuard } from '../job-guard.js';
import { TAKEN_BY_KEY, claimSet } from './claim-set.js';

/** A live request's finish guard and claim, from its own columns. */
const LIVE_MEMBER = {
  ...{ job: 'jobs', id: 'live.id', session: 'live.session', epoch: 'live.epoch' },
  ...{ status: 'live.status', now: NOW },
};
const LIVE_CLAIM = {
  ...{ session: 'live.session', host: 'coalesce(live.host, live.session_host)' },
  ...{ now: 't.now', start: 'live.start' },
};

export const FINISH_AND_CLAIM_MANY = `WITH req AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::text[],
    $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
    AS r (id, session, epoch, status, exit_code, reason, tail, host, start, ord)
), s AS (
  SELECT id, host, state FROM sessions WHERE id = ANY ($2::bigint[]) FOR KEY SHARE
), live AS (
  SELECT req.*, s.host AS session_host, row_number() OVER (ORDER BY req.ord) AS rank
  FROM req JOIN s ON s.id = req.session
  WHERE s.state = 'live' AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = req.id)
), f AS (
  UPDATE jobs SET status = live.status, finished_at = ${NOW}, exit_code = live.exit_code,
    reason = live.reason, output_tail = live.tail
  FROM live, tasks
  WHERE ${finishGuard(LIVE_MEMBER)}
    AND tasks.id = jobs.task_id
  RETURNING ${jobFields('jobs')}, live.ord, live.session_host, live.exit_code AS by_exit, tasks.key
), k AS (
  DELETE FROM workspace_locks USING f WHERE workspace_locks.job_id = f.id
  RETURNING workspace_locks.workspace, workspace_locks.job_id, workspace_locks.session_id,
    workspace_locks.epoch, f.ord, f.finished_at
), ${FINISH_TASK_STEP}, n AS (
  SELECT id, rank FROM baton_take_queued((SELECT count(*) FROM live)::int, ${NOW}) WITH ORDINALITY AS n (id, rank)
), j AS (
  UPDATE jobs SET ${claimSet(LIVE_CLAIM)}
  FROM n JOIN live ON live.rank = n.rank, tasks, (SELECT ${NOW} AS now) t
  WHERE jobs.id = n.id AND ${TAKEN_BY_KEY} AND jobs.status = 'queued' AND tasks.id = jobs.task_id
  RETURNING ${jobFields('jobs')}, live.ord, live.start, live.session_host, tasks.key
), a AS (
  ${insertAuditRows(`
    SELECT f.ord * 5 AS part, ''::text AS seq, f.finished_at AS at, 'job:finished'::text AS type,
      f.key AS task_key, f.id AS job_id, f.session_id, f.session_host AS host, f.epoch,
      jsonb_build_object('status', f.status, 'exitCode', f.by_exit) || ${FINISHED_TASK_JSON}
        || ${FINISHED_REASON_JSON} AS detail
    FROM f
    UNION ALL
    SELECT k.ord * 5 + 1, k.workspace::text, k.finished_at, 'lock:released', ${keyOfJob('k.job_id')},
      k.job_id, k.session_id, ${hostOf('k.session_id')}, k.epoch,
      jsonb_build_object('workspace', k.workspace, 'outcome', 'released')
    FROM k
    UNION ALL
    SELECT j.ord * 5 + 3, '', j.claimed_at, 'job:claimed', j.key, j.id, j.session_id, j.session_host,
      j.epoch, ${claimedDetail('j', 'j.start')}
    FROM j`)}
)
SELECT req.ord, s.state AS session_state, x.*
FROM req LEFT JOIN s ON s.id = req.session LEFT JOIN (
  SELECT 'f' AS step, f.ord AS step_ord, ${jobFields('f')}, f.key FROM f
  UNION ALL
  SELECT 'j', j.ord, ${jobFields('j')}, j.key FROM j
) x ON x.step_ord = req.ord`;

/** One request's row of the answer: its session's state, and a job when `step` is 'f' or 'j'. */
export type BatchRow = Partial<JobRow> & {
  ord: string;
  session_state: string | null;
  step: 'f' | 'j' | null;
};

/** The statement's parameters for a batch of requests, column by column. */
export function batchParams(reqs: readonly JobFinishAndClaimNextParams[]): unknown[] {
  const col = <T>(pick: (request: JobFinishAndClaimNextParams) => T): T[] => reqs.map(pick);
  return [
    col((params) => params.id),
    col((params) => params.session),
    col((params) => params.epoch),
    col((params) => params.status),
    col((params) => params.exitCode ?? null),
    col((params) => params.reason ?? null),
    col((params) => params.outputTail ?? null),
    col((params) => params.host ?? null),
    col((params) => params.start === true),
  ];
}

/** The answer's rows grouped by request, in request order. */
export function rowsByRequest(rows: readonly BatchRow[], count: number): BatchRow[][] {
  const out: BatchRow[][] = Array.from({ length: count }, () => []);
  for (const row of rows) out[Number(row.ord) - 1]?.push(row);
  return out;
}
