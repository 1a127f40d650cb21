/**
 * Tasks, sessions and claims on PostgreSQL. Each write is one data-modifying CTE that makes the
 * guarded change, writes the history row and appends the audit row together; when the guard
 * matches nothing, a second read explains why (not found, ended, held, fenced).
 *
 * Locks are taken in one order: a session row before any task or claim row, and a claim row
 * before its task row. Claiming takes FOR KEY SHARE on the claimer's session (the foreign-key
 * checks take it anyway); ending a session takes FOR UPDATE on it, which waits for in-flight
 * claims and holds back new ones until the session reads as ended.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult, FencedResult } from '../../core/claim.js';
import { ConflictError, FencedError, NotFoundError } from '../../core/errors.js';
import { PRIORITY_DEFAULT } from '../../core/validate.js';
import type { Store } from '../store.js';
import {
  NOW,
  SESSION_COLUMNS,
  TASK_COLUMNS,
  claimState,
  holderOf,
  hostOf,
  liveClaimOf,
  toClaim,
  toSession,
  toTask,
  type ClaimRow,
  type ClaimStateRow,
  type SessionRow,
  type TaskRow,
} from './rows.js';
import { releaseSessionHoldings } from './locks.js';
import type { PgRunner } from './runner.js';

/** How often a guarded write that found the state changed under it is tried again. */
const RACE_RETRY_MAX = 100;

const CLAIM_COLUMNS = `t.key, c.session_id, c.epoch, c.claimed_at, c.heartbeat_at, c.released_at,
  c.outcome`;

const sessionNotFound = (id: number): NotFoundError =>
  new NotFoundError('session', String(id), 'start one with `baton session start`');

const sessionNotLive = (id: number, state: string): FencedError =>
  new FencedError(`session ${id} is ${state}`, 'start a new session with `baton session start`');

export function postgresTasks(run: PgRunner): Store['tasks'] {
  return {
    add: async (p) => {
      const row = await run.one<TaskRow>(
        `WITH t AS (
           INSERT INTO tasks (key, title, priority, project, assignee, labels, created_at)
           SELECT $1::text, $2::text, $3::int, $4::text, $5::text, $6::jsonb, ${NOW}
           WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE key = $1::text)
           ON CONFLICT (key) DO NOTHING
           RETURNING ${TASK_COLUMNS}
         ), a AS (
           INSERT INTO audit_events (at, type, task_key, session_id, host)
           SELECT created_at, 'task:added', key, $7::bigint, ${hostOf('$7::bigint')} FROM t
         )
         SELECT ${TASK_COLUMNS} FROM t`,
        [
          p.key,
          p.title ?? '',
          p.priority ?? PRIORITY_DEFAULT,
          p.project ?? null,
          p.assignee ?? null,
          JSON.stringify(p.labels ?? []),
          p.by ?? null,
        ],
      );
      if (row === undefined) {
        throw new ConflictError(`task ${p.key} already exists`, 'pick another key, or use it as is');
      }
      return toTask(row);
    },
    get: async (key) => {
      const row = await run.one<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE key = $1::text`, [key]);
      return row === undefined ? null : toTask(row);
    },
    list: async (p = {}) =>
      (
        await run.rows<TaskRow>(
          `SELECT ${TASK_COLUMNS} FROM tasks
           WHERE ($1::text IS NULL OR project = $1::text)
             AND ($2::text IS NULL OR assignee = $2::text)
           ORDER BY priority, key LIMIT $3::int`,
          [p.project ?? null, p.assignee ?? null, p.limit ?? 1000],
        )
      ).map(toTask),
  };
}

export function postgresSessions(run: PgRunner): Store['sessions'] {
  return {
    start: async (p) => {
      const row = await run.one<SessionRow>(
        `WITH s AS (
           INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
           SELECT $1::text, $2::text, $3::int, $4::text, n.t, n.t FROM (SELECT ${NOW} AS t) n
           RETURNING ${SESSION_COLUMNS}
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT started_at, 'session:started', id, host,
             jsonb_build_object('kind', kind, 'pid', pid)
           FROM s
         )
         SELECT ${SESSION_COLUMNS} FROM s`,
        [p.kind, p.host, p.pid, p.name ?? null],
      );
      assert(row !== undefined, 'INSERT … RETURNING gives one row');
      return toSession(row);
    },
    end: (id) => endSession(run, id),
    heartbeat: (p) => heartbeat(run, p),
    get: async (id) => {
      const row = await run.one<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1::bigint`, [
        id,
      ]);
      return row === undefined ? null : toSession(row);
    },
    list: async (p = {}) =>
      (
        await run.rows<SessionRow>(
          `SELECT ${SESSION_COLUMNS} FROM sessions
           WHERE (NOT $1::boolean OR state = 'live') ORDER BY id`,
          [p.liveOnly === true],
        )
      ).map(toSession),
  };
}

/**
 * Two statements in one transaction, because the second needs a snapshot taken after the first
 * holds the session row FOR UPDATE: by then every claim and every workspace lock grant that saw
 * the session live has committed (each held FOR KEY SHARE on the row), and every later one will
 * wait and then see it ended. The second releases the claims and the locks together.
 */
async function endSession(run: PgRunner, id: number): Promise<boolean> {
  return run.transaction(async (q) => {
    const [marked] = await q.rows<{ found: number; ended: number }>(
      `WITH l AS (SELECT id, state FROM sessions WHERE id = $1::bigint FOR UPDATE),
       u AS (
         UPDATE sessions s SET state = 'ended', ended_at = ${NOW}
         FROM l WHERE s.id = l.id AND l.state = 'live'
         RETURNING s.id
       )
       SELECT (SELECT count(*) FROM l) AS found, (SELECT count(*) FROM u) AS ended`,
      [id],
    );
    if (marked === undefined || marked.found === 0) throw sessionNotFound(id);
    if (marked.ended === 0) return false;
    // Claims first, then the session's workspace locks, then the session's own row, in one
    // ordered insert so ids follow that order.
    await q.rows(
      releaseSessionHoldings(
        'abandoned',
        `UNION ALL
         SELECT 2, '', n.at, 'session:ended', NULL, NULL, $1::bigint, ${hostOf('$1::bigint')}, NULL, '{}'::jsonb
         FROM n`,
      ),
      [id],
    );
    return true;
  });
}

async function heartbeat(
  run: PgRunner,
  p: Parameters<Store['sessions']['heartbeat']>[0],
): Promise<FencedResult> {
  const key = p.claim?.key ?? null;
  for (let attempt = 1; ; attempt++) {
    // The session's heartbeat is written only when the named task exists: on SQLite an unknown
    // task rolls the whole heartbeat back.
    const [r] = await run.rows<{ live: number; held: number }>(
      `WITH s AS (
         UPDATE sessions SET heartbeat_at = ${NOW}
         WHERE id = $1::bigint AND state = 'live'
           AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM tasks WHERE key = $2::text))
         RETURNING id, heartbeat_at
       ), c AS (
         UPDATE claims SET heartbeat_at = s.heartbeat_at
         FROM s, tasks t
         WHERE t.key = $2::text AND claims.task_id = t.id AND claims.session_id = s.id
           AND claims.epoch = $3::bigint AND claims.released_at IS NULL
         RETURNING claims.id
       )
       SELECT (SELECT count(*) FROM s) AS live, (SELECT count(*) FROM c) AS held`,
      [p.session, key, p.claim?.epoch ?? null],
    );
    if (r !== undefined && r.live === 1) {
      if (p.claim === undefined || r.held === 1) return { ok: true };
      const current = holderOf(await claimState(run, p.claim.key, null));
      return { ok: false, reason: 'fenced', current };
    }
    const state = await claimState(run, key ?? '', p.session);
    if (state.session_state === null) throw sessionNotFound(p.session);
    if (state.session_state !== 'live') return { ok: false, reason: 'fenced', current: null };
    if (p.claim !== undefined && state.task_id === null) {
      throw new NotFoundError('task', p.claim.key);
    }
    // The task appeared, or the session came back, between the two statements: try again.
    assert(attempt < RACE_RETRY_MAX, 'a heartbeat does not race forever');
  }
}

export function postgresClaims(run: PgRunner): Store['claims'] {
  return {
    acquire: (p) => acquire(run, p),
    release: (p) => release(run, p),
    current: async (key) => {
      const state = await claimState(run, key, null);
      if (state.task_id === null) throw new NotFoundError('task', key);
      return liveClaimOf(key, state);
    },
    history: async (key) =>
      (
        await run.rows<ClaimRow>(
          `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
           WHERE t.key = $1::text ORDER BY c.epoch`,
          [key],
        )
      ).map(toClaim),
  };
}

/**
 * The grant: a guarded UPDATE of the task's lock word. Under READ COMMITTED the row lock and the
 * EvalPlanQual re-check of `holder_session_id IS NULL` on the newest row version make the second
 * of two racing claimers match nothing. The claims insert and the audit row ride in the same
 * statement; the partial unique index claims_one_live_per_task backs the guard (a violation is
 * retried by the runner and then reads as held).
 */
async function acquire(run: PgRunner, p: Parameters<Store['claims']['acquire']>[0]): Promise<ClaimResult> {
  for (let attempt = 1; ; attempt++) {
    const row = await run.one<ClaimRow>(
      `WITH s AS (
         SELECT id, host FROM sessions WHERE id = $2::bigint AND state = 'live' FOR KEY SHARE
       ), t AS (
         UPDATE tasks SET epoch = tasks.epoch + 1, holder_session_id = s.id, claimed_at = ${NOW}
         FROM s
         WHERE tasks.key = $1::text AND tasks.holder_session_id IS NULL
         RETURNING tasks.id, tasks.key, tasks.epoch, tasks.claimed_at, s.id AS session_id, s.host
       ), c AS (
         INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
         SELECT id, session_id, epoch, claimed_at, claimed_at FROM t
         RETURNING task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome
       ), a AS (
         INSERT INTO audit_events (at, type, task_key, session_id, host, epoch)
         SELECT claimed_at, 'claim:granted', key, session_id, host, epoch FROM t
       )
       SELECT ${CLAIM_COLUMNS} FROM c JOIN t ON t.id = c.task_id`,
      [p.key, p.session],
    );
    if (row !== undefined) return { ok: true, claim: toClaim(row), granted: true };
    const lost = explainRefusedClaim(p, await claimState(run, p.key, p.session));
    if (lost !== null) return lost;
    // Released between the two statements: the task is free again, so claim it again.
    assert(attempt < RACE_RETRY_MAX, 'a claim does not race forever');
  }
}

/** Why a grant matched nothing, in SQLite's order of checks; null when the task is free now. */
function explainRefusedClaim(
  p: Parameters<Store['claims']['acquire']>[0],
  state: ClaimStateRow,
): ClaimResult | null {
  if (state.task_id === null) {
    throw new NotFoundError('task', p.key, 'add it with `baton task add`');
  }
  if (state.session_state === null) throw sessionNotFound(p.session);
  if (state.session_state !== 'live') throw sessionNotLive(p.session, state.session_state);
  const mine = liveClaimOf(p.key, state);
  if (mine !== null && mine.session === p.session) return { ok: true, claim: mine, granted: false };
  const holder = holderOf(state);
  return holder === null ? null : { ok: false, reason: 'held', holder };
}

async function release(run: PgRunner, p: Parameters<Store['claims']['release']>[0]): Promise<FencedResult> {
  const [r] = await run.rows<{ released: number }>(
    `WITH c AS (
       UPDATE claims SET released_at = ${NOW}, outcome = $4::text
       FROM tasks t
       WHERE t.key = $1::text AND claims.task_id = t.id AND claims.session_id = $2::bigint
         AND claims.epoch = $3::bigint AND claims.released_at IS NULL
       RETURNING claims.task_id, claims.epoch, claims.released_at, t.key
     ), t AS (
       UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL
       FROM c WHERE tasks.id = c.task_id AND tasks.epoch = c.epoch
       RETURNING tasks.id
     ), a AS (
       INSERT INTO audit_events (at, type, task_key, session_id, host, epoch, detail)
       SELECT released_at, 'claim:released', key, $2::bigint, ${hostOf('$2::bigint')}, epoch,
         jsonb_build_object('outcome', $4::text)
       FROM c
     )
     SELECT (SELECT count(*) FROM c) AS released, (SELECT count(*) FROM t) AS unlocked`,
    [p.key, p.session, p.epoch, p.outcome],
  );
  if (r !== undefined && r.released === 1) return { ok: true };
  const state = await claimState(run, p.key, p.session);
  if (state.task_id === null) throw new NotFoundError('task', p.key);
  if (state.session_state === null) throw sessionNotFound(p.session);
  return { ok: false, reason: 'fenced', current: holderOf(state) };
}
