/**
 * Tasks and sessions on PostgreSQL (claims: claims.ts). Each write is one data-modifying CTE that makes the
 * guarded change, writes the history row and appends the audit row together; when the guard
 * matches nothing, a second read explains why (not found, ended, held, fenced).
 *
 * Locks are taken in one order: a session row before any task or claim row, and a claim row
 * before its task row. Claiming takes FOR KEY SHARE on the claimer's session (the foreign-key
 * checks take it anyway); ending a session takes FOR UPDATE on it, which waits for in-flight
 * claims and holds back new ones until the session reads as ended.
 */
import { assert } from '../../core/assert.js';
import type { FencedResult } from '../../core/claim.js';
import { ConflictError, FencedError, NotFoundError } from '../../core/errors.js';
import { PRIORITY_DEFAULT } from '../../core/validate.js';
import type { SessionEndReason } from '../../core/session.js';
import type { SessionEndReport } from '../rescue.js';
import type { Store, TaskAddParams } from '../store.js';
import type { Task } from '../../core/task.js';
import { addEdge } from './dependencies.js';
import {
  NOW,
  SESSION_COLUMNS,
  TASK_COLUMNS,
  actorJson,
  claimState,
  holderOf,
  hostOf,
  toSession,
  toTask,
  type SessionRow,
  type TaskRow,
} from './rows.js';
import { insertAuditRows, releaseSessionHoldings } from './locks.js';
import type { PgExecutor } from './executor.js';
import { requeueSessionJobs } from './requeue.js';
import { Batcher } from './batcher.js';
import type { ListedTask } from '../task-list.js';
import { listSql } from './task-list.js';
import type { Outcome } from '../outcome.js';

/** How often a guarded write that found the state changed under it is tried again. */
export const RACE_RETRY_MAX = 100;

export const sessionNotFound = (id: number): NotFoundError =>
  new NotFoundError('session', String(id), 'start one with `baton session start`');

export const sessionNotLive = (id: number, state: string): FencedError =>
  new FencedError(`session ${id} is ${state}`, 'start a new session with `baton session start`');

const taskExists = (key: string): ConflictError =>
  new ConflictError(`task ${key} already exists`, 'pick another key, or use it as is');

/** ADD_TASK's parameters. */
const addValues = (params: TaskAddParams): unknown[] => [
  params.key,
  params.title ?? '',
  params.priority ?? PRIORITY_DEFAULT,
  params.project ?? null,
  params.assignee ?? null,
  JSON.stringify(params.labels ?? []),
  params.by ?? null,
  params.body ?? '',
  params.url ?? null,
  params.reviewRequired === true,
  params.escalation ?? null,
  params.byName ?? (params.by === undefined ? null : `session ${params.by}`),
  params.actor ?? null,
];

/**
 * The task and the edges of the tasks it waits for in one transaction (docs/decisions/0035): no
 * claim, `next` or auto-enqueue sees the task without them, and a refused edge adds nothing.
 */
function addWithEdges(exec: PgExecutor, params: TaskAddParams, after: readonly string[]): Promise<Task> {
  return exec.transaction(async (querier) => {
    const [row] = await querier.rows<TaskRow>(ADD_TASK, addValues(params));
    if (row === undefined) throw taskExists(params.key);
    const by = { name: params.actor ?? params.byName ?? 'unknown', session: params.by };
    for (const on of after) await addEdge(querier, { key: params.key, on, by });
    return toTask(row);
  });
}

export function postgresTasks(exec: PgExecutor): Store['tasks'] {
  return {
    add: async (params) => {
      const after = params.after ?? [];
      if (after.length > 0) return addWithEdges(exec, params, after);
      const row = await exec.one<TaskRow>(ADD_TASK, addValues(params));
      if (row === undefined) throw taskExists(params.key);
      return toTask(row);
    },
    get: async (key) => {
      const row = await exec.one<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE key = $1::text`, [key]);
      return row === undefined ? null : toTask(row);
    },
    list: async (params = {}) => {
      const { sql, values } = listSql(params);
      const rows = await exec.rows<TaskRow & { waits_for: string[] }>(sql, values);
      return rows.map((row): ListedTask => ({ ...toTask(row), waitsFor: row.waits_for }));
    },
    keysBeyondAscii: async (limit) =>
      (
        await exec.rows<{ key: string }>(
          'SELECT key FROM tasks WHERE octet_length(key) <> char_length(key) ORDER BY id LIMIT $1::int',
          [limit],
        )
      ).map((row) => row.key),
    update: async (params) => {
      const row = await exec.one<TaskRow>(UPDATE_TASK, [
        params.key,
        params.title ?? null,
        params.body ?? null,
        params.url === undefined ? null : JSON.stringify(params.url),
        params.labels === undefined ? null : JSON.stringify(params.labels),
        params.reviewRequired ?? null,
        params.by.session ?? null,
        params.by.name,
      ]);
      if (row === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
      return toTask(row);
    },
  };
}

/**
 * Inserts a task, open or (with $11, the vague-issue rule's reason) escalated, with its ledger
 * rows: `task:added` (by $13, who asked), and `task:state` for an escalated one.
 */
const ADD_TASK = `WITH t AS (
  INSERT INTO tasks (key, title, priority, project, assignee, labels, created_at, body, url,
    review_required, state, state_at, state_by, state_reason)
  SELECT $1::text, $2::text, $3::int, $4::text, $5::text, $6::jsonb, n.now, $8::text, $9::text,
    $10::boolean, CASE WHEN $11::text IS NULL THEN 'open' ELSE 'escalated' END, n.now, $12::text, $11::text
  FROM (SELECT ${NOW} AS now) n
  WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE key = $1::text)
  ON CONFLICT (key) DO NOTHING
  RETURNING ${TASK_COLUMNS}
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, created_at AS at, 'task:added'::text AS type, key AS task_key,
      NULL::bigint AS job_id, $7::bigint AS session_id, ${hostOf('$7::bigint')} AS host, NULL::bigint AS epoch,
      ${actorJson('$13')} AS detail
    FROM t
    UNION ALL
    SELECT 1, '', created_at, 'task:state', key, NULL, $7::bigint, ${hostOf('$7::bigint')}, NULL,
      jsonb_build_object('from', 'open', 'to', 'escalated', 'action', 'escalate', 'by', state_by,
        'reason', state_reason)
    FROM t WHERE state = 'escalated'`)}
)
SELECT ${TASK_COLUMNS} FROM t`;

/**
 * Sets the fields given (a null parameter keeps the field; the URL comes as JSON so that it can
 * be set to null), audited `task:updated` with their names when any was given.
 */
const UPDATE_TASK = `WITH o AS (
  SELECT id FROM tasks WHERE key = $1::text FOR UPDATE
), t AS (
  UPDATE tasks SET title = coalesce($2::text, title), body = coalesce($3::text, body),
    url = CASE WHEN $4::jsonb IS NULL THEN url ELSE $4::jsonb #>> '{}' END,
    labels = coalesce($5::jsonb, labels), review_required = coalesce($6::boolean, review_required)
  FROM o WHERE tasks.id = o.id
  RETURNING ${TASK_COLUMNS.split(',')
    .map((column) => `tasks.${column.trim()}`)
    .join(', ')}
), f AS (
  SELECT array_remove(ARRAY[
    CASE WHEN $2::text IS NOT NULL THEN 'title' END, CASE WHEN $3::text IS NOT NULL THEN 'body' END,
    CASE WHEN $4::jsonb IS NOT NULL THEN 'url' END, CASE WHEN $5::jsonb IS NOT NULL THEN 'labels' END,
    CASE WHEN $6::boolean IS NOT NULL THEN 'review_required' END], NULL) AS fields
), a AS (
  INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
  SELECT ${NOW}, 'task:updated', t.key, $7::bigint, ${hostOf('$7::bigint')},
    jsonb_build_object('fields', to_jsonb(f.fields), 'by', $8::text)
  FROM t, f WHERE cardinality(f.fields) > 0
)
SELECT * FROM t`;

/** `beat` runs heartbeats, on connections of their own (postgres-store.ts, livenessPool). */
export function postgresSessions(exec: PgExecutor, beat: PgExecutor = exec): Store['sessions'] {
  // Many sessions of one process beating at once share a statement and a commit (batcher.ts).
  const beats = new Batcher<HeartbeatParams, FencedResult>(
    (reqs) => heartbeatMany(beat, reqs),
    HEARTBEATS_IN_FLIGHT,
    HEARTBEAT_BATCH_MAX,
  );
  return {
    start: async (params) => {
      const row = await exec.one<SessionRow>(
        `WITH s AS (
           INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ttl_ms)
           SELECT $1::text, $2::text, $3::int, $4::text, n.t, n.t, $5::bigint FROM (SELECT ${NOW} AS t) n
           RETURNING ${SESSION_COLUMNS}
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT started_at, 'session:started', id, host,
             jsonb_build_object('kind', kind, 'pid', pid)
               || CASE WHEN ttl_ms IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('ttlMs', ttl_ms) END
           FROM s
         )
         SELECT ${SESSION_COLUMNS} FROM s`,
        [params.kind, params.host, params.pid, params.name ?? null, params.ttlMs ?? null],
      );
      assert(row !== undefined, 'INSERT … RETURNING gives one row');
      return toSession(row);
    },
    end: (id, how = 'stopped', by) => endSession(exec, id, how, by ?? null),
    heartbeat: (params) => beats.submit(params),
    get: async (id) => {
      const row = await exec.one<SessionRow>(
        `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1::bigint`,
        [id],
      );
      return row === undefined ? null : toSession(row);
    },
    list: async (params = {}) =>
      (
        await exec.rows<SessionRow & { agent_pid: number | null }>(
          // Only an agent's session has a job:spawned row: a runner's, with all its ledger rows, is not read.
          `SELECT ${SESSION_COLUMNS}, CASE WHEN $2::boolean AND kind = 'agent' THEN
             (SELECT (a.detail->>'pid')::int FROM audit_events a
              WHERE a.session_id = sessions.id AND a.type = 'job:spawned' ORDER BY a.id LIMIT 1) END AS agent_pid
           FROM sessions
           WHERE (NOT $1::boolean OR state = 'live') ORDER BY id`,
          [params.liveOnly === true, params.agentPids === true],
        )
      ).map((row) => ({ ...toSession(row), agentPid: row.agent_pid })),
  };
}

/**
 * Two statements in one transaction, because the second needs a snapshot taken after the first
 * holds the session row FOR UPDATE: by then every claim and every workspace lock grant that saw
 * the session live has committed (each held FOR KEY SHARE on the row), and every later one will
 * wait and then see it ended. The second releases the claims and the locks together.
 */
async function endSession(
  exec: PgExecutor,
  id: number,
  how: SessionEndReason,
  by: string | null,
): Promise<SessionEndReport> {
  return exec.transaction(async (querier) => {
    const [marked] = await querier.rows<{ found: number; ended: number }>(
      `WITH l AS (SELECT id, state FROM sessions WHERE id = $1::bigint FOR UPDATE),
       u AS (
         UPDATE sessions s SET state = 'ended', ended_at = ${NOW}, end_reason = $2::text, ended_by = $3::text
         FROM l WHERE s.id = l.id AND l.state = 'live'
         RETURNING s.id
       )
       SELECT (SELECT count(*) FROM l) AS found, (SELECT count(*) FROM u) AS ended`,
      [id, how, by],
    );
    if (marked === undefined || marked.found === 0) throw sessionNotFound(id);
    if (marked.ended === 0) return { ended: false, jobsRequeued: [] };
    const jobsRequeued = await requeueSessionJobs(querier, id);
    // Claims first, then the session's workspace locks, then the session's own row, in one
    // ordered insert so ids follow that order.
    await querier.rows(
      releaseSessionHoldings(
        'abandoned',
        `UNION ALL
         SELECT 2, '', n.at, 'session:ended', NULL, NULL, $1::bigint, ${hostOf('$1::bigint')}, NULL,
           jsonb_build_object('how', $2::text) || jsonb_strip_nulls(jsonb_build_object('by', $3::text))
         FROM n`,
      ),
      [id, how, by],
    );
    return { ended: true, jobsRequeued };
  });
}

type HeartbeatParams = Parameters<Store['sessions']['heartbeat']>[0];

/**
 * Up to four batches in flight over the pool, each of up to 500 beats: an idle caller's beat goes
 * at once, alone; under load one statement renews hundreds of sessions. Batches lock their
 * sessions in id order, as one beat locks its one session, so two batches cannot deadlock.
 */
const HEARTBEATS_IN_FLIGHT = 4;
const HEARTBEAT_BATCH_MAX = 500;

/**
 * The beats of a batch in one statement: every live session named (with its task, when one is
 * named, existing) is renewed with the claims the beat names. A beat that renewed what it named
 * is `ok`; any other (fenced, an ended session, an unknown task or session) is judged again
 * alone by heartbeat(), which says why, so the batch only ever takes the common path.
 */
async function heartbeatMany(
  exec: PgExecutor,
  reqs: readonly HeartbeatParams[],
): Promise<readonly Outcome<FencedResult>[]> {
  const rows = await exec.rows<{ i: string; live: boolean; held: number }>(
    `WITH req AS (
       SELECT r.i, r.session, r.key, r.epoch, t.id AS task_id
       FROM unnest($1::bigint[], $2::text[], $3::bigint[]) WITH ORDINALITY AS r(session, key, epoch, i)
       LEFT JOIN tasks t ON t.key = r.key
     ), l AS (
       SELECT id FROM sessions
       WHERE id IN (SELECT session FROM req WHERE key IS NULL OR task_id IS NOT NULL) AND state = 'live'
       ORDER BY id FOR NO KEY UPDATE
     ), s AS (
       UPDATE sessions SET heartbeat_at = ${NOW} FROM l WHERE sessions.id = l.id
       RETURNING sessions.id, sessions.heartbeat_at
     ), c AS (
       UPDATE claims SET heartbeat_at = s.heartbeat_at
       FROM s JOIN req ON req.session = s.id
       WHERE claims.session_id = s.id AND claims.released_at IS NULL
         AND (req.key IS NULL OR (req.task_id IS NOT NULL
           AND claims.epoch = req.epoch AND claims.task_id = req.task_id))
       RETURNING claims.session_id, claims.task_id, claims.epoch
     ), quick AS (
       -- This statement's own transaction commits without waiting for its WAL flush: a heartbeat
       -- lost in a server crash harms no one (it is renewed within seconds, long before any
       -- session is judged stale), and the beats no longer queue behind fsyncs.
       SELECT set_config('synchronous_commit', 'off', true) AS setting
     )
     SELECT req.i::text AS i,
       (req.key IS NULL OR req.task_id IS NOT NULL) AND EXISTS (SELECT 1 FROM s WHERE s.id = req.session)
         AS live,
       (SELECT count(*)::int FROM c WHERE c.session_id = req.session AND c.task_id = req.task_id
          AND c.epoch = req.epoch) AS held
     FROM req, quick ORDER BY req.i`,
    [
      reqs.map((params) => params.session),
      reqs.map((params) => params.claim?.key ?? null),
      reqs.map((params) => params.claim?.epoch ?? null),
    ],
  );
  return Promise.all(
    reqs.map(async (params, index): Promise<Outcome<FencedResult>> => {
      const row = rows[index];
      if (row?.live === true && (params.claim === undefined || row.held >= 1))
        return { ok: true, value: { ok: true } };
      try {
        return { ok: true, value: await heartbeat(exec, params) };
      } catch (error) {
        return { ok: false, error };
      }
    }),
  );
}

async function heartbeat(exec: PgExecutor, params: HeartbeatParams): Promise<FencedResult> {
  const key = params.claim?.key ?? null;
  for (let attempt = 1; ; attempt++) {
    // The session's heartbeat is written only when the named task exists: on SQLite an unknown
    // task rolls the whole heartbeat back.
    const [row] = await exec.rows<{ live: number; held: number }>(
      `WITH s AS (
         UPDATE sessions SET heartbeat_at = ${NOW}
         WHERE id = $1::bigint AND state = 'live'
           AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM tasks WHERE key = $2::text))
         RETURNING id, heartbeat_at
       ), c AS (
         -- The named claim; with none named, every live claim of the session.
         UPDATE claims SET heartbeat_at = s.heartbeat_at
         FROM s
         WHERE claims.session_id = s.id AND claims.released_at IS NULL
           AND ($2::text IS NULL OR (claims.epoch = $3::bigint
             AND claims.task_id = (SELECT id FROM tasks WHERE key = $2::text)))
         RETURNING claims.id
       )
       SELECT (SELECT count(*) FROM s) AS live, (SELECT count(*) FROM c) AS held`,
      [params.session, key, params.claim?.epoch ?? null],
    );
    if (row !== undefined && row.live === 1) {
      if (params.claim === undefined || row.held >= 1) return { ok: true };
      const current = holderOf(await claimState(exec, params.claim.key, null));
      return { ok: false, reason: 'fenced', current };
    }
    const state = await claimState(exec, key ?? '', params.session);
    if (state.session_state === null) throw sessionNotFound(params.session);
    // An ended (or rescued) session still learns who holds the task it named now.
    if (state.session_state !== 'live') {
      return { ok: false, reason: 'fenced', current: holderOf(state), sessionEnded: true };
    }
    if (params.claim !== undefined && state.task_id === null) {
      throw new NotFoundError('task', params.claim.key);
    }
    // The task appeared, or the session came back, between the two statements: try again.
    assert(attempt < RACE_RETRY_MAX, 'a heartbeat does not race forever');
  }
}
