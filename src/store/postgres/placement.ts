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
import type { PlaceManyParams, PlaceParams, PlaceResult, TermRef } from '../dispatch-store.js';
import { blockerOf, claimSet, jobTaskOpen, taskOpen } from './claim-set.js';
import { jobById } from './jobs.js';
import { LOCK_COLUMNS, insertAuditRows, seqOf } from './locks.js';
import { NOW, hostOf, jobColumns, ms, toJob, type JobRow } from './rows.js';
import type { PgExecutor } from './executor.js';

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

export const termParams = (term: TermRef): unknown[] => [term.lease, term.holder, term.term];

/** A placement's claim (`j` below): for the host's runner session, under the term, never started. */
const PLACED = claimSet({
  session: 'h.session_id',
  host: 'h.name',
  now: `coalesce(k.acquired_at, ${NOW})`,
  start: 'false',
  term: 'l.term',
});

/**
 * Places the jobs of `r` ($4 ids, $5 hosts, $6 workspaces or nulls, in the order asked) in one
 * statement, each with its 'job:placed' ledger row and, with a workspace, the workspace's lock
 * and its 'lock:acquired' row: a job with a workspace moves only with the lock its row got.
 *
 * - `missing`: a workspace that does not exist stops the whole statement (nothing is locked).
 * - `h` takes FOR KEY SHARE on the asked hosts' runner sessions (the hosts named by key: a
 *   semi-join with `r` hashed every host of the fleet), as a claim does on its session,
 *   so a sessions.end or a rescue of one (FOR UPDATE on it, then releasing its locks on a fresh
 *   snapshot) waits for this statement and then sees the locks it granted.
 * - `q` locks the job rows; after a wait the status and backoff are re-checked on their newest
 *   versions, so a job placed or cancelled meanwhile is left alone.
 * - `w` locks the workspace rows FOR UPDATE, serialising every grant on a workspace (acquire
 *   locks it too); after a wait it yields the newest lock epoch.
 * - `k` inserts the locks: ON CONFLICT on the primary key (one live lock per workspace) inserts
 *   nothing when a lock is there, including one committed after this statement's snapshot, or
 *   one this statement inserted for an earlier row naming the same workspace.
 * - `q` also leaves out a job without a command bound for a host whose runner said it has no
 *   agent command (docs/decisions/0047): read from the host row whose session `h` holds FOR KEY
 *   SHARE, and only a register under a new session (the old one ended) changes it.
 * - `j` places each job on its host under the term, only with its lock when it needs one.
 * Every step joins `l` (through `h`), so the lease row is locked first: lease, sessions, jobs,
 * workspaces; rows of one kind are locked in id (or name) order.
 *
 * One row per job asked, in order: whether the term was live, whether the job was placeable,
 * its task's gate as read, and the placed job (null columns when it did not move).
 */
const PLACE_MANY = `
WITH ${LIVE_TERM}, r AS (
  SELECT * FROM unnest($4::bigint[], $5::text[], $6::text[]) WITH ORDINALITY AS r(id, host, workspace, n)
), missing AS (
  SELECT r.workspace FROM r
  WHERE r.workspace IS NOT NULL AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.name = r.workspace)
), h AS (
  SELECT h.name, h.session_id, h.agent_command FROM hosts h JOIN sessions s ON s.id = h.session_id
  WHERE h.name = ANY ($5::text[]) AND h.enabled AND s.state = 'live'
    AND EXISTS (SELECT 1 FROM l) AND NOT EXISTS (SELECT 1 FROM missing)
  ORDER BY s.id
  FOR KEY SHARE OF s
), q AS (
  SELECT jobs.id FROM jobs
  WHERE jobs.id IN (SELECT r.id FROM r JOIN h ON h.name = r.host)
    AND jobs.status = 'queued' AND jobs.run_after <= ${NOW} AND ${jobTaskOpen('jobs')}
    AND (jobs.command IS NOT NULL
      OR jobs.id IN (SELECT r.id FROM r JOIN h ON h.name = r.host WHERE h.agent_command IS NOT FALSE))
  ORDER BY jobs.id
  FOR UPDATE OF jobs
), w AS (
  SELECT name, lock_epoch FROM workspaces
  WHERE name IN (SELECT r.workspace FROM r JOIN q ON q.id = r.id)
  ORDER BY name
  FOR UPDATE
), k AS (
  INSERT INTO workspace_locks (workspace, job_id, session_id, epoch, acquired_at)
  SELECT w.name, q.id, h.session_id, w.lock_epoch + 1, ${NOW}
  FROM r JOIN q ON q.id = r.id JOIN h ON h.name = r.host JOIN w ON w.name = r.workspace
  ORDER BY r.n
  ON CONFLICT (workspace) DO NOTHING
  RETURNING ${LOCK_COLUMNS}
), e AS (
  UPDATE workspaces SET lock_epoch = k.epoch FROM k WHERE workspaces.name = k.workspace
), j AS (
  UPDATE jobs SET ${PLACED}
  FROM l, r JOIN h ON h.name = r.host LEFT JOIN k ON k.job_id = r.id
  WHERE jobs.id = r.id AND jobs.id IN (SELECT q.id FROM q) AND jobs.status = 'queued'
    AND (r.workspace IS NULL OR k.job_id IS NOT NULL)
  RETURNING ${jobColumns('jobs')}
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ${seqOf('r.n')} || '0' AS seq, j.claimed_at AS at, 'job:placed'::text AS type,
      j.key AS task_key, j.id AS job_id, j.session_id, ${hostOf('j.session_id')} AS host, j.epoch,
      jsonb_build_object('host', j.host, 'term', $3::bigint, 'attempt', j.attempt) AS detail
    FROM j JOIN r ON r.id = j.id
    UNION ALL
    SELECT 0, ${seqOf('r.n')} || '1', k.acquired_at, 'lock:acquired', j.key, k.job_id, k.session_id,
      ${hostOf('k.session_id')}, k.epoch, jsonb_build_object('workspace', k.workspace)
    FROM k JOIN j ON j.id = k.job_id JOIN r ON r.id = j.id`)}
)
SELECT EXISTS (SELECT 1 FROM l) AS live_term, (SELECT min(workspace) FROM missing) AS missing,
  r.id IN (SELECT q.id FROM q) AS placeable, ${taskOpen('t')} AS task_open,
  t.gate AS task_gate, ${blockerOf('t')} AS task_blocker,
  gj.status = 'queued' AND gj.command IS NULL
    AND (SELECT ah.agent_command FROM hosts ah WHERE ah.name = r.host) IS FALSE AS lacks_agent_command, j.*
FROM r LEFT JOIN j ON j.id = r.id LEFT JOIN jobs gj ON gj.id = r.id LEFT JOIN tasks t ON t.id = gj.task_id
ORDER BY r.n`;

type PlaceRow = Partial<JobRow> & {
  live_term: boolean;
  missing: string | null;
  placeable: boolean;
  task_open: boolean | null;
  task_gate: TaskGate | null;
  task_blocker: string | null;
  lacks_agent_command: boolean | null;
};

type Ask = Omit<PlaceParams, 'term'>;

export async function place(exec: PgExecutor, params: PlaceParams): Promise<PlaceResult> {
  const [result] = await placeMany(exec, { term: params.term, jobs: [params] });
  assert(result !== undefined, 'placeMany answers every job asked');
  return result;
}

/**
 * PLACE_MANY, then each job's answer, checked in SQLite's order: fenced, gated, an unknown
 * workspace (thrown), no_agent_command, workspace_held, lost. A job whose lock was released between the statement
 * and the look at its holder found the workspace free: it is asked again, with the others so.
 */
export async function placeMany(exec: PgExecutor, params: PlaceManyParams): Promise<PlaceResult[]> {
  assert(
    new Set(params.jobs.map((job) => job.id)).size === params.jobs.length,
    'placeMany asks for distinct jobs',
  );
  const results: (PlaceResult | undefined)[] = params.jobs.map(() => undefined);
  let asking = params.jobs.map((ask, index) => ({ ask, index }));
  for (let attempt = 1; asking.length > 0; attempt++) {
    assert(attempt <= RACE_RETRY_MAX, 'a locking placement does not race forever');
    const rows = await exec.rows<PlaceRow>(PLACE_MANY, [
      ...termParams(params.term),
      asking.map((entry) => entry.ask.id),
      asking.map((entry) => entry.ask.host),
      asking.map((entry) => entry.ask.workspace ?? null),
    ]);
    assert(rows.length === asking.length, 'placeMany returns one row per job asked');
    const missing = rows[0]?.missing ?? null;
    if (missing !== null) throw new NotFoundError('workspace', missing, 'add it with `baton workspace add`');
    const holders = await workspaceHolders(
      exec,
      asking
        .filter((entry, index) => entry.ask.workspace !== undefined && !isPlaced(rows[index]))
        .map((entry) => entry.ask),
    );
    const again: typeof asking = [];
    for (const [position, entry] of asking.entries()) {
      const answer = await answerOf(exec, entry.ask, rows[position] as PlaceRow, holders);
      if (answer === 'again') again.push(entry);
      else results[entry.index] = answer;
    }
    asking = again;
  }
  return results.map((result) => {
    assert(result !== undefined, 'every job asked is answered');
    return result;
  });
}

const isPlaced = (row: PlaceRow | undefined): boolean => row?.id !== undefined && row.id !== null;

async function answerOf(
  exec: PgExecutor,
  ask: Ask,
  row: PlaceRow,
  holders: ReadonlyMap<string, LockHolder>,
): Promise<PlaceResult | 'again'> {
  if (!row.live_term) return { ok: false, reason: 'fenced' };
  if (row.task_open === false) return refusedTask(row.task_gate, row.task_blocker);
  if (isPlaced(row)) return { ok: true, job: toJob(row as JobRow) };
  if (row.lacks_agent_command === true) return { ok: false, reason: 'no_agent_command' };
  const holder = ask.workspace === undefined ? undefined : holders.get(ask.workspace);
  if (holder !== undefined) return { ok: false, reason: 'workspace_held', holder };
  if (!row.placeable || ask.workspace === undefined)
    return { ok: false, reason: 'lost', job: await jobById(exec, ask.id) };
  // The lock was released between the statement and the look at its holder: try again.
  return 'again';
}

/** Who holds the workspaces the jobs not placed asked for, on a fresh snapshot. */
async function workspaceHolders(exec: PgExecutor, asks: readonly Ask[]): Promise<Map<string, LockHolder>> {
  const names = [
    ...new Set(
      asks.map((ask) => ask.workspace).filter((workspace): workspace is string => workspace !== undefined),
    ),
  ];
  if (names.length === 0) return new Map();
  const rows = await exec.rows<{
    workspace: string;
    job_id: number | null;
    session_id: number;
    epoch: number;
    acquired_at: Date;
    host: string | null;
  }>(
    `SELECT l.workspace, l.job_id, l.session_id, l.epoch, l.acquired_at, s.host
     FROM workspace_locks l LEFT JOIN sessions s ON s.id = l.session_id
     WHERE l.workspace = ANY($1::text[])`,
    [names],
  );
  return new Map(
    rows.map((row) => [
      row.workspace,
      {
        session: row.session_id,
        host: row.host ?? '',
        jobId: row.job_id,
        since: ms(row.acquired_at),
        epoch: row.epoch,
      },
    ]),
  );
}

/** Why a task takes no job: its gate first; else the dependency it waits for, if any; else gated. */
function refusedTask(gate: TaskGate | null, blocker: string | null): PlaceResult {
  if (gate === null && blocker !== null) return { ok: false, reason: 'blocked', blocker };
  return { ok: false, reason: 'gated', gate };
}
