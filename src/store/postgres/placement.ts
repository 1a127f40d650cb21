/**
 * Term-fenced placement on PostgreSQL, with or without a workspace lock, and the term fence the
 * dispatcher's other writes share.
 *
 * Placement is fenced by the dispatcher's lease term and serialised against a takeover of the
 * lease: the statement locks the live lease row FOR SHARE before it touches the job. A lease
 * acquire locks that row FOR UPDATE (and renew and resign UPDATE it), which conflicts with FOR
 * SHARE, so a takeover either committed before our lock (we then read the new term and are
 * fenced) or waits until our placement has committed. A placement can therefore never land
 * under a term that another dispatcher has already replaced.
 *
 * Lock order: the lease row, the host's runner session (a locking placement), the job row, the
 * workspace row. Each step's WHERE names the previous CTE, so it is locked first.
 */
import { assert } from '../../core/assert.js';
import { NotFoundError } from '../../core/errors.js';
import type { LockHolder } from '../../core/workspace-lock.js';
import type { TaskGate } from '../../core/task.js';
import type { PlaceParams, PlaceResult, TermRef } from '../dispatch-store.js';
import { jobById } from './jobs.js';
import { LOCK_COLUMNS, insertAuditRows } from './locks.js';
import { NOW, hostOf, jobColumns, ms, toJob, type JobRow } from './rows.js';
import type { PgRunner } from './runner.js';

/** How often a locking placement that found the lock released under it is tried again. */
const RACE_RETRY_MAX = 100;

/**
 * The live lease row for (name, holder, term), locked FOR SHARE, as CTE `l`; $1 name, $2 holder,
 * $3 term. Under READ COMMITTED a row locked after a wait is re-checked on its newest version,
 * so a term replaced meanwhile makes `l` empty. The lock is held to commit: the lease cannot be
 * taken over, renewed or resigned until the statement's writes are in. The statement's write
 * joins `l`, so `l` is read (and locked) before any job row is: lease, then job.
 */
export const LIVE_TERM = `l AS (
  SELECT term FROM leases
  WHERE name = $1::text AND holder = $2::text AND term = $3::bigint
    AND expires_at > ${NOW}
  FOR SHARE
)`;

export const termParams = (t: TermRef): unknown[] => [t.lease, t.holder, t.term];

/** The job's task is open and behind no gate: only then is the job placed. */
const TASK_PLACEABLE = `EXISTS (
  SELECT 1 FROM tasks t WHERE t.id = jobs.task_id AND t.state = 'open' AND t.gate IS NULL)`;

/** Why a job was not placed, as read by the statement: whether its task is open, and its gate. */
const TASK_GATE = `(SELECT t.state = 'open' AND t.gate IS NULL FROM jobs gj JOIN tasks t ON t.id = gj.task_id
    WHERE gj.id = $4::bigint) AS task_open,
  (SELECT t.gate FROM jobs gj JOIN tasks t ON t.id = gj.task_id WHERE gj.id = $4::bigint) AS task_gate`;

/**
 * queued → claimed on the host, assigned to its runner session, in one statement with its
 * 'job:placed' audit row. The job moves only while the term is live (`l`), its backoff has
 * passed and the host is enabled with a live runner session; a job that moved meanwhile is
 * re-checked on its newest version after the row-lock wait and matches nothing (claimed_at is
 * read in the SET list, so after that wait). Always one row: whether the term was live, and the
 * placed job (null columns when it did not move).
 */
const PLACE = `
WITH ${LIVE_TERM}, h AS (
  SELECT h.name, h.session_id FROM hosts h JOIN sessions s ON s.id = h.session_id
  WHERE h.name = $5::text AND h.enabled AND s.state = 'live'
), j AS (
  UPDATE jobs SET status = 'claimed', epoch = jobs.epoch + 1, attempt = jobs.attempt + 1,
    session_id = h.session_id, host = h.name, term = l.term, claimed_at = ${NOW},
    started_at = NULL, reason = NULL, agent_session_id = NULL, pid = NULL
  FROM l, h
  WHERE jobs.id = $4::bigint AND jobs.status = 'queued' AND jobs.run_after <= ${NOW} AND ${TASK_PLACEABLE}
  RETURNING ${jobColumns('jobs')}
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT claimed_at, 'job:placed', key, id, session_id, ${hostOf('j.session_id')}, epoch,
    jsonb_build_object('host', $5::text, 'term', $3::bigint, 'attempt', attempt)
  FROM j
)
SELECT EXISTS (SELECT 1 FROM l) AS live_term, ${TASK_GATE}, j.*
FROM (SELECT 1) one LEFT JOIN j ON true`;

/**
 * PLACE plus the workspace lock ($6), in one statement: both happen or neither.
 *
 * - `h` takes FOR KEY SHARE on the host's runner session, as a claim does on its session, so a
 *   sessions.end or a rescue of that session (FOR UPDATE on it, then releasing its locks on a
 *   fresh snapshot) waits for this statement and then sees the lock it granted.
 * - `q` locks the job row; after a wait the status and backoff are re-checked on its newest
 *   version, so a job placed or cancelled meanwhile is left alone.
 * - `w` locks the workspace row FOR UPDATE, serialising every grant on the workspace (acquire
 *   locks it too); after a wait it yields the newest lock epoch.
 * - `k` inserts the lock: ON CONFLICT on the primary key (one live lock per workspace) inserts
 *   nothing when a lock is there, including one committed after this statement's snapshot.
 * - `j` places the job only with the lock `k` returned.
 *
 * Always one row: whether the term was live, whether the job was placeable, and the placed job.
 */
const PLACE_LOCKED = `
WITH ${LIVE_TERM}, h AS (
  SELECT h.name, h.session_id FROM hosts h JOIN sessions s ON s.id = h.session_id
  WHERE h.name = $5::text AND h.enabled AND s.state = 'live' AND EXISTS (SELECT 1 FROM l)
  FOR KEY SHARE OF s
), q AS (
  SELECT id FROM jobs
  WHERE id = $4::bigint AND status = 'queued' AND run_after <= ${NOW} AND EXISTS (SELECT 1 FROM h)
    AND ${TASK_PLACEABLE}
  FOR UPDATE OF jobs
), w AS (
  SELECT name, lock_epoch FROM workspaces
  WHERE name = $6::text AND EXISTS (SELECT 1 FROM q)
  FOR UPDATE
), k AS (
  INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
  SELECT w.name, q.id, h.session_id, w.lock_epoch + 1, ${NOW} FROM w, q, h
  ON CONFLICT (workspace) DO NOTHING
  RETURNING ${LOCK_COLUMNS}
), e AS (
  UPDATE workspaces SET lock_epoch = k.epoch FROM k WHERE workspaces.name = k.workspace
), j AS (
  UPDATE jobs SET status = 'claimed', epoch = jobs.epoch + 1, attempt = jobs.attempt + 1,
    session_id = h.session_id, host = h.name, term = l.term, claimed_at = k.acquired_at,
    started_at = NULL, reason = NULL, agent_session_id = NULL, pid = NULL
  FROM l, h, k
  WHERE jobs.id = k.job_id AND jobs.status = 'queued'
  RETURNING ${jobColumns('jobs')}
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, claimed_at AS at, 'job:placed'::text AS type, key AS task_key,
      id AS job_id, session_id, ${hostOf('j.session_id')} AS host, epoch,
      jsonb_build_object('host', $5::text, 'term', $3::bigint, 'attempt', attempt) AS detail
    FROM j
    UNION ALL
    SELECT 1, k.workspace, k.acquired_at, 'lock:acquired', j.key, k.job_id, k.session_id,
      ${hostOf('k.session_id')}, k.epoch, jsonb_build_object('workspace', k.workspace)
    FROM k, j`)}
)
SELECT EXISTS (SELECT 1 FROM l) AS live_term, EXISTS (SELECT 1 FROM q) AS placeable, ${TASK_GATE}, j.*
FROM (SELECT 1) one LEFT JOIN j ON true`;

type PlaceRow = Partial<JobRow> & {
  live_term: boolean;
  placeable?: boolean;
  task_open: boolean | null;
  task_gate: TaskGate | null;
};

export async function place(run: PgRunner, p: PlaceParams): Promise<PlaceResult> {
  const params = [...termParams(p.term), p.id, p.host];
  if (p.workspace === undefined) {
    const row = await run.one<PlaceRow>(PLACE, params);
    assert(row !== undefined, 'place returns exactly one row');
    if (!row.live_term) return { ok: false, reason: 'fenced' };
    if (row.task_open === false) return { ok: false, reason: 'gated', gate: row.task_gate };
    if (row.id === undefined || row.id === null)
      return { ok: false, reason: 'lost', job: await jobById(run, p.id) };
    return { ok: true, job: toJob(row as JobRow) };
  }
  for (let attempt = 1; ; attempt++) {
    const row = await run.one<PlaceRow>(PLACE_LOCKED, [...params, p.workspace]);
    assert(row !== undefined, 'place returns exactly one row');
    if (!row.live_term) return { ok: false, reason: 'fenced' };
    if (row.task_open === false) return { ok: false, reason: 'gated', gate: row.task_gate };
    if (row.id !== undefined && row.id !== null) return { ok: true, job: toJob(row as JobRow) };
    // Not placed: explain it in SQLite's order of checks, on a fresh snapshot.
    const state = await workspaceState(run, p.workspace);
    if (state === null)
      throw new NotFoundError('workspace', p.workspace, 'add it with `baton workspace add`');
    if (state.holder !== null) return { ok: false, reason: 'workspace_held', holder: state.holder };
    if (row.placeable !== true) return { ok: false, reason: 'lost', job: await jobById(run, p.id) };
    // The lock was released between the two statements: the workspace is free, so try again.
    assert(attempt < RACE_RETRY_MAX, 'a locking placement does not race forever');
  }
}

/** Whether the workspace exists (null when not) and who holds it. */
async function workspaceState(
  run: PgRunner,
  workspace: string,
): Promise<{ holder: LockHolder | null } | null> {
  const row = await run.one<{
    found: boolean;
    job_id: number | null;
    session_id: number | null;
    epoch: number | null;
    acquired_at: Date | null;
    host: string | null;
  }>(
    `SELECT w.name IS NOT NULL AS found, l.job_id, l.session_id, l.epoch, l.acquired_at, s.host
     FROM (SELECT 1) one
     LEFT JOIN workspaces w ON w.name = $1::text
     LEFT JOIN workspace_locks l ON l.workspace = $1::text
     LEFT JOIN sessions s ON s.id = l.session_id`,
    [workspace],
  );
  if (row === undefined || !row.found) return null;
  if (row.session_id === null || row.epoch === null || row.acquired_at === null) return { holder: null };
  const since = ms(row.acquired_at);
  return {
    holder: { session: row.session_id, host: row.host ?? '', jobId: row.job_id, since, epoch: row.epoch },
  };
}
