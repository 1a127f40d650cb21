/**
 * Queue jobs on PostgreSQL: every transition is one guarded UPDATE whose audit row is written by
 * the same statement. A transition that matches nothing reads the job once more to report `lost`.
 */
import { cancelReason } from '../../core/job.js';
import { assert } from '../../core/assert.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { GITHUB_KEY_PREFIX } from '../../core/github.js';
import { TERMINAL_JOB_STATES, type Job, type JobTransitionResult } from '../../core/job.js';
import { PRIORITY_DEFAULT } from '../../core/validate.js';
import type { JobCancelParams, JobEnqueueResult, JobFinishParams, JobGuardParams, Store } from '../store.js';
import { deleteLocks, insertAuditRows, lockReleasedRows } from './locks.js';
import { listJobs } from './job-list.js';
import {
  NOW,
  TASK_COLUMNS,
  actorJson,
  claimedDetail,
  limitJson,
  hostOf,
  jobColumns,
  jobFields,
  stateFacts,
  toJob,
  type JobRow,
  type TaskRow,
} from './rows.js';
import { taskStateRefusal } from '../task-refusal.js';
import { Batcher } from './batcher.js';
import { claimNext, finishAndClaimMany, finishAuditRows, finishSteps, takeHandOff } from './job-steps.js';
import { HandOffs } from '../hand-off.js';
import { jobBatch } from './job-batch.js';
import { ACTIVE_SQL, TERMINAL_SQL } from '../job-guard.js';
import { taskOpen } from './claim-set.js';
import type { PgExecutor } from './executor.js';

const ENQUEUE_RETRY_MAX = 20;
/** The parameters of a single finish. */
const FINISH_REFS = {
  ...{ id: '$1', session: '$2', epoch: '$3', status: '$4' },
  ...{ exitCode: '$5', reason: '$6', tail: '$7' },
};

export async function jobById(exec: PgExecutor, id: number): Promise<Job | null> {
  const row = await exec.one<JobRow>(`SELECT ${jobColumns('jobs')} FROM jobs WHERE id = $1::bigint`, [id]);
  return row === undefined ? null : toJob(row);
}

export async function lostOr(
  exec: PgExecutor,
  id: number,
  row: JobRow | undefined,
): Promise<JobTransitionResult> {
  if (row !== undefined) return { ok: true, job: toJob(row) };
  const job = await jobById(exec, id);
  if (job === null) throw new NotFoundError('job', String(id));
  return { ok: false, reason: 'lost', job };
}

/**
 * Creates the task when absent, then queues a job unless one is active, in one statement. Both
 * inserts are backed by unique indexes (tasks.key, jobs_one_active_per_task), so a concurrent
 * enqueue of the same key makes ON CONFLICT do nothing; the statement then returns no row, and
 * the next run sees the winner's rows and answers `created: false`.
 *
 * When a live session waits for a job (claimNext's waitMs) and the task takes jobs (open, no
 * gate), the job is inserted claimed for the one whose wait ends first, as claimNext would have
 * claimed it (epoch and attempt 1, its host, started if it asked), with its `job:claimed` row
 * (`handedOff: true`), and the session names it in `handed_job` (docs/decisions/0024). SKIP
 * LOCKED passes over a session another statement is changing (its claimNext, another enqueue's
 * hand-off, a heartbeat): the job is then queued, and the wake-up sends the worker to claim it.
 */
const ENQUEUE = `
WITH new_task AS (
  INSERT INTO tasks (key, priority, created_at, state_at)
  SELECT $1::text, $7::int, n.now, n.now FROM (SELECT ${NOW} AS now) n
  WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE key = $1::text)
  ON CONFLICT (key) DO NOTHING
  RETURNING id, key, priority, created_at
), old_task AS (
  -- FOR SHARE: a state change of the task (UPDATE, then reading its jobs afresh) waits for this
  -- enqueue to commit and then ends its job, or this enqueue waits and then reads the new state.
  SELECT id, key, priority, state, gate FROM tasks WHERE key = $1::text FOR SHARE
), task AS (
  SELECT id, key, priority, 'open'::text AS state, NULL::text AS gate FROM new_task
  UNION ALL
  SELECT id, key, priority, state, gate FROM old_task
), active AS (
  -- By the task's id as a value, so the index is probed for that task: joined to the CTE, the
  -- generic plan read every entry of jobs_one_active_per_task, whose dead ones (each job since the
  -- last VACUUM) a bitmap scan never marks, and each enqueue grew slower (docs/decisions/0002).
  SELECT j.id FROM jobs j WHERE j.task_id = (SELECT id FROM task LIMIT 1) AND j.status IN ${ACTIVE_SQL}
), waiter AS (
  SELECT s.id, coalesce(s.wait_host, s.host) AS host, s.wait_start AS start
  FROM sessions s
  -- now(), the statement's start, not the volatile NOW: an index condition, so the scan of
  -- sessions_waiting starts past every mark whose wait is over (ended sessions leave theirs).
  WHERE s.wait_until > now() AND s.state = 'live' AND s.handed_job IS NULL
    AND (SELECT ${taskOpen('task')} FROM task LIMIT 1) AND NOT EXISTS (SELECT 1 FROM active)
  ORDER BY s.wait_until, s.id
  LIMIT 1
  FOR UPDATE OF s SKIP LOCKED
), job AS (
  INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max, github,
    status, epoch, attempt, session_id, host, claimed_at, started_at, time_limit_ms)
  SELECT task.id, coalesce($2::int, task.priority), n.now, $3::int, $4::text, coalesce($5::int, 3),
    left(task.key, ${GITHUB_KEY_PREFIX.length}) = '${GITHUB_KEY_PREFIX}',
    CASE WHEN w.id IS NULL THEN 'queued' WHEN w.start THEN 'running' ELSE 'claimed' END,
    CASE WHEN w.id IS NULL THEN 0 ELSE 1 END, CASE WHEN w.id IS NULL THEN 0 ELSE 1 END,
    w.id, w.host, CASE WHEN w.id IS NOT NULL THEN n.now END, CASE WHEN w.start THEN n.now END, $9::int
  FROM task CROSS JOIN (SELECT ${NOW} AS now) n LEFT JOIN waiter w ON true
  WHERE NOT EXISTS (SELECT 1 FROM active) AND task.state = 'open'
  ON CONFLICT (task_id) WHERE status IN ${ACTIVE_SQL} DO NOTHING
  RETURNING ${jobFields('jobs')}
), handed AS (
  UPDATE sessions SET handed_job = job.id, wait_until = NULL
  FROM job WHERE sessions.id = job.session_id
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch, detail)
  SELECT x.at, x.type, $1::text, x.job_id, x.session_id, x.host, x.epoch, x.detail
  FROM (
    SELECT 0 AS part, created_at AS at, 'task:added' AS type, NULL::bigint AS job_id,
      $6::bigint AS session_id, ${hostOf('$6::bigint')} AS host, NULL::bigint AS epoch,
      ${actorJson('$8')} AS detail
    FROM new_task
    UNION ALL
    SELECT 1, queued_at, 'job:enqueued', id, $6::bigint, ${hostOf('$6::bigint')}, NULL::bigint,
      jsonb_build_object('priority', priority, 'ramMb', ram_mb) || ${limitJson('time_limit_ms')}
        || ${actorJson('$8')}
    FROM job
    UNION ALL
    SELECT 2, claimed_at, 'job:claimed', id, session_id, ${hostOf('job.session_id')}, epoch,
      ${claimedDetail('job', "job.status = 'running'")} || '{"handedOff": true}'::jsonb
    FROM job WHERE session_id IS NOT NULL
  ) x
  ORDER BY x.part
)
SELECT true AS created, job.*, $1::text AS key FROM job
UNION ALL
SELECT false, ${jobColumns('jobs')} FROM jobs
WHERE id IN (SELECT id FROM active) AND (SELECT state FROM task LIMIT 1) = 'open'`;

/** ENQUEUE, run again when it lost a race (no row) to a concurrent enqueue of the key. */
async function enqueue(
  exec: PgExecutor,
  params: Parameters<Store['jobs']['enqueue']>[0],
): Promise<JobEnqueueResult> {
  for (let attempt = 1; ; attempt++) {
    const row = await exec.one<JobRow & { created: boolean }>(ENQUEUE, [
      params.key,
      params.priority ?? null,
      params.ramMb ?? null,
      params.command ?? null,
      params.attemptMax ?? null,
      params.by ?? null,
      PRIORITY_DEFAULT,
      params.actor ?? null,
      params.timeLimitMs ?? null,
    ]);
    if (row !== undefined) return { job: toJob(row), created: row.created };
    const refused = await notOpen(exec, 'key = $1::text', params.key);
    if (refused !== null) throw refused;
    assert(attempt < ENQUEUE_RETRY_MAX, 'an enqueue does not race forever');
  }
}

const TERMINAL_STATES = new Set<string>(TERMINAL_JOB_STATES);

type RetryRow = Partial<JobRow> & { old_status: string | null; task_state: string | null; created: boolean };

/** The refusal of a job for a task that is not open, read fresh; null when it is open (a race). */
async function notOpen(exec: PgExecutor, where: string, param: unknown): Promise<Error | null> {
  const task = await exec.one<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE ${where}`, [param]);
  return task === undefined || task.state === 'open' ? null : taskStateRefusal(stateFacts(task), 'enqueue');
}

/**
 * Queues a new job like an ended one (same task, priority, RAM budget, command, attempt
 * budget and time limit) unless the task has an active job, which is returned instead; one statement, the
 * same insert as ENQUEUE behind the same unique index. Always one row: the old job's status
 * (null when it does not exist) and the new or active job, whose columns are null when the
 * insert lost a race (then the next run sees the winner).
 */
const RETRY = `
WITH old AS (
  SELECT id, task_id, status, priority, ram_mb, command, attempt_max, github, time_limit_ms
  FROM jobs WHERE id = $1::bigint
), tk AS (
  SELECT id, state FROM tasks WHERE id = (SELECT task_id FROM old) FOR SHARE
), active AS (
  -- By the task's id as a value, for the reason ENQUEUE gives.
  SELECT j.id FROM jobs j WHERE j.task_id = (SELECT task_id FROM old) AND j.status IN ${ACTIVE_SQL}
), job AS (
  INSERT INTO jobs (task_id, priority, queued_at, ram_mb, command, attempt_max, github, time_limit_ms)
  SELECT task_id, priority, ${NOW}, CASE WHEN $4::boolean THEN $5::int ELSE ram_mb END, command, attempt_max, github,
    time_limit_ms
  FROM old
  WHERE old.status IN ${TERMINAL_SQL} AND NOT EXISTS (SELECT 1 FROM active)
    AND (SELECT state FROM tk) = 'open'
  ON CONFLICT (task_id) WHERE status IN ${ACTIVE_SQL} DO NOTHING
  RETURNING ${jobColumns('jobs')}
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, detail)
  SELECT queued_at, 'job:enqueued', key, id, $2::bigint, ${hostOf('$2::bigint')},
    jsonb_build_object('priority', priority, 'ramMb', ram_mb, 'retryOf', $1::bigint, 'by', $3::text)
      || ${limitJson('time_limit_ms')}
  FROM job
), r AS (
  SELECT true AS created, job.* FROM job
  UNION ALL
  SELECT false, ${jobColumns('jobs')} FROM jobs WHERE id IN (SELECT id FROM active)
)
SELECT old.status AS old_status, (SELECT state FROM tk) AS task_state, r.*
FROM (SELECT 1) one LEFT JOIN old ON true LEFT JOIN r ON true`;

/**
 * How many batched statements of one kind a store runs at once, and how many calls each takes.
 * One: two concurrent batches halve each batch and meet each other's claims; in the bench's
 * drains they gave the same throughput (within the noise) for 80% more PostgreSQL CPU per job
 * (docs/decisions/0002, Finding 7).
 */
const BATCHES_IN_FLIGHT = 1;
const BATCH_MAX = 64;

/** claimNext's hand-offs (store/hand-off.ts). */
function postgresHandOffs(exec: PgExecutor, took: (count: number) => void): HandOffs {
  return new HandOffs({
    take: (session, known) => takeHandOff(exec, session, known),
    claim: async (params, known) => {
      const claimed = await claimNext(exec, params, known);
      if (claimed.job !== null) took(1);
      return claimed;
    },
  });
}

/** `took` counts the jobs taken from the queue, for the queue's upkeep (upkeep.ts). */
export function postgresJobs(exec: PgExecutor, took: (count: number) => void): Store['jobs'] {
  const handOffs = postgresHandOffs(exec, took);
  type Loop = Parameters<Store['jobs']['finishAndClaimNext']>[0];
  type LoopResult = Awaited<ReturnType<Store['jobs']['finishAndClaimNext']>>;
  const loops = new Batcher<Loop, LoopResult>(
    async (reqs) => {
      const outcomes = await finishAndClaimMany(exec, reqs, (id, row) => lostOr(exec, id, row));
      took(outcomes.filter((outcome) => outcome.ok && outcome.value.next !== null).length);
      return outcomes;
    },
    BATCHES_IN_FLIGHT,
    BATCH_MAX,
  );
  return {
    enqueue: async (params) => {
      const result = await enqueue(exec, params);
      if (result.created && result.job.status !== 'queued') took(1); // handed off (decision 0024)
      return result;
    },
    claimNext: (params) => handOffs.claimNext(params),
    start: (params) => startJob(exec, params),
    finish: (params) => finishJob(exec, params),
    finishAndClaimNext: (params) => loops.submit(params),
    batch: (params) => jobBatch(exec, params, (id) => lostOr(exec, id, undefined), took),
    retry: (params) => retryJob(exec, params),
    cancel: (params) => cancelJob(exec, params),
    get: (id) => jobById(exec, id),
    list: (params = {}) => listJobs(exec, params),
  };
}

/** jobs.start: claimed → running, guarded by (session, epoch), with its `job:started` row in the statement. */
async function startJob(exec: PgExecutor, params: JobGuardParams): Promise<JobTransitionResult> {
  const row = await exec.one<JobRow>(
    `WITH j AS (
           UPDATE jobs SET status = 'running', started_at = ${NOW}
           WHERE id = $1::bigint AND session_id = $2::bigint AND epoch = $3::bigint
             AND status = 'claimed'
           RETURNING ${jobColumns('jobs')}
         ), a AS (
           INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, epoch)
           SELECT started_at, 'job:started', key, id, $2::bigint, ${hostOf('$2::bigint')},
             $3::bigint
           FROM j
         )
         SELECT * FROM j`,
    [params.id, params.session, params.epoch],
  );
  return lostOr(exec, params.id, row);
}

/** jobs.finish: one statement, its ledger rows and lock releases included (job-steps.ts finishSteps). */
export const FINISH_SQL = `WITH ${finishSteps(FINISH_REFS)}, a AS (${insertAuditRows(finishAuditRows(FINISH_REFS, 0))})
         SELECT * FROM f`;

/**
 * FINISH_SQL as the leader's sweep fails a job (time-limit-sweep.ts): its `job:finished` row also
 * says `by: 'leader'` and the leader's session ($8), as its `job:timed_out` row does.
 */
export const SWEPT_FINISH_SQL = `WITH ${finishSteps(FINISH_REFS)}, a AS (${insertAuditRows(
  finishAuditRows(
    { ...FINISH_REFS, detail: `jsonb_build_object('by', 'leader', 'bySession', $8::bigint)` },
    0,
  ),
)})
         SELECT * FROM f`;

/** FINISH_SQL's parameters. */
export const finishValues = (params: JobFinishParams): unknown[] => [
  ...[params.id, params.session, params.epoch, params.status],
  ...[params.exitCode ?? null, params.reason ?? null, params.outputTail ?? null],
];

async function finishJob(exec: PgExecutor, params: JobFinishParams): Promise<JobTransitionResult> {
  const row = await exec.one<JobRow>(FINISH_SQL, finishValues(params));
  return lostOr(exec, params.id, row);
}

/** RETRY, run again when it lost a race to a concurrent enqueue of the task. */
async function retryJob(
  exec: PgExecutor,
  params: Parameters<Store['jobs']['retry']>[0],
): Promise<JobEnqueueResult> {
  for (let attempt = 1; ; attempt++) {
    const row = await exec.one<RetryRow>(RETRY, [
      params.id,
      params.by ?? null,
      params.actor ?? null,
      params.ramMb !== undefined,
      params.ramMb ?? null,
    ]);
    assert(row !== undefined, 'retry returns exactly one row');
    if (row.old_status === null) throw new NotFoundError('job', String(params.id));
    if (!TERMINAL_STATES.has(row.old_status)) {
      throw new ConflictError(`job ${params.id} is ${row.old_status}`, 'only an ended job can be retried');
    }
    if (row.task_state !== 'open') {
      const refused = await notOpen(exec, 'id = (SELECT task_id FROM jobs WHERE id = $1::bigint)', params.id);
      if (refused !== null) throw refused;
    }
    if (row.id !== undefined && row.id !== null) {
      return { job: toJob(row as JobRow), created: row.created };
    }
    // Another job for the task was queued after our snapshot: the next run returns it.
    assert(attempt < ENQUEUE_RETRY_MAX, 'a retry does not race forever');
  }
}

/** jobs.cancel: one statement, with its ledger row and, unless the job ran, its lock's release. */
async function cancelJob(exec: PgExecutor, params: JobCancelParams): Promise<JobTransitionResult> {
  const row = await exec.one<JobRow>(
    // `o` locks the job and reads the status it had (its newest version, after any wait): a
    // running job's agent may still be at work, so its runner releases the lock once the tree
    // is dead (workspaceLocks.releaseJob); before running, no agent was ever spawned.
    `WITH o AS (
           SELECT id, status FROM jobs WHERE id = $1::bigint AND status IN ${ACTIVE_SQL} FOR UPDATE
         ), j AS (
           UPDATE jobs SET status = 'cancelled', finished_at = ${NOW}, reason = $2::text
           FROM o WHERE jobs.id = o.id AND jobs.status IN ${ACTIVE_SQL}
           RETURNING ${jobColumns('jobs')}, o.status AS was
         ), ${deleteLocks('k', `workspace_locks.job_id = j.id AND j.was <> 'running'`, 'j')}, a AS (
           ${insertAuditRows(`
             SELECT 0 AS part, ''::text AS seq, finished_at AS at, 'job:cancelled'::text AS type,
               key AS task_key, id AS job_id, $3::bigint AS session_id,
               ${hostOf('$3::bigint')} AS host, epoch,
               jsonb_build_object('reason', reason, 'by', $4::text) AS detail
             FROM j
             UNION ALL
             ${lockReleasedRows(1, 'k', 'j.finished_at', `'released'`, 'j')}`)}
         )
         SELECT * FROM j`,
    [params.id, cancelReason(params), params.by ?? null, params.actor ?? null],
  );
  return lostOr(exec, params.id, row);
}
