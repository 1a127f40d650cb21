/**
 * Claims on PostgreSQL. The grant is one data-modifying CTE guarded on the task's lock word; when
 * it matches nothing, a second read explains why (not found, ended, not open, held, fenced). A
 * holder whose session passed its own TTL on the database clock is taken over by a statement of
 * its own (TAKE_OVER): its claim released `expired`, the epoch bumped, the new claim granted, in
 * one statement, so no leader is needed to free a dead human's claim.
 *
 * Lock order (tasks-claims.ts): sessions, then claims, then the task's active job, then tasks.
 */
import { assert } from '../../core/assert.js';
import type { ClaimResult, FencedResult } from '../../core/claim.js';
import { NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import { taskStateRefusal } from '../task-refusal.js';
import { insertAuditRows } from './locks.js';
import {
  EXPIRED,
  NOW,
  RENEW_IF_SILENT,
  claimState,
  holderOf,
  hostOf,
  liveClaimOf,
  stateFacts,
  taskGrantSet,
  toClaim,
  type ClaimRow,
  type ClaimStateRow,
} from './rows.js';
import type { PgExecutor } from './executor.js';
import { expiredDetail, moveSql } from './task-state.js';
import { forceRelease } from './force-release.js';
import { RACE_RETRY_MAX, sessionNotFound, sessionNotLive } from './tasks-claims.js';

const CLAIM_COLUMNS = `t.key, c.session_id, c.epoch, c.claimed_at, c.heartbeat_at, c.released_at,
  c.outcome`;

export function postgresClaims(exec: PgExecutor): Store['claims'] {
  return {
    acquire: (params) => acquireClaim(exec, params),
    release: (params) => release(exec, params),
    forceRelease: (params) => exec.transaction((transaction) => forceRelease(transaction, params)),
    current: async (key) => {
      const state = await claimState(exec, key, null);
      if (state.task_id === null) throw new NotFoundError('task', key);
      return liveClaimOf(key, state);
    },
    history: async (key) =>
      (
        await exec.rows<ClaimRow>(
          `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
           WHERE t.key = $1::text ORDER BY c.epoch`,
          [key],
        )
      ).map(toClaim),
  };
}

/**
 * The grant: a guarded UPDATE of the task's lock word. Under READ COMMITTED the row lock and the
 * EvalPlanQual re-check of `holder_session_id IS NULL` (and of the task being open) on the
 * newest row version make the second of two racing claimers match nothing. The claims insert and
 * the audit row ride in the same statement; the partial unique index claims_one_live_per_task
 * backs the guard (a violation is retried by the executor and then reads as held). `r` renews a
 * silent claimant (RENEW_IF_SILENT) whenever the task is open, granted, held or its own, so the
 * takeover and the answer "yours already" that may follow are not lost at once either.
 */
const GRANT = `WITH s AS (
  SELECT id, host FROM sessions WHERE id = $2::bigint AND state = 'live' FOR KEY SHARE
), r AS (
  ${RENEW_IF_SILENT(`EXISTS (SELECT 1 FROM tasks WHERE key = $1::text AND state = 'open')`)}
), t AS (
  UPDATE tasks SET ${taskGrantSet('s.id', NOW)}
  FROM s
  WHERE tasks.key = $1::text AND tasks.holder_session_id IS NULL AND tasks.state = 'open'
    AND (SELECT count(*) FROM r) >= 0
  RETURNING tasks.id, tasks.key, tasks.epoch, tasks.claimed_at, s.id AS session_id, s.host
), c AS (
  INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
  SELECT id, session_id, epoch, claimed_at, claimed_at FROM t
  RETURNING task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome
), a AS (
  INSERT INTO audit_events (at, type, task_key, session_id, host, epoch)
  SELECT claimed_at, 'claim:granted', key, session_id, host, epoch FROM t
)
SELECT ${CLAIM_COLUMNS} FROM c JOIN t ON t.id = c.task_id`;

/**
 * The takeover of a claim whose session passed its TTL: $3 is the holder's session and $4 the
 * epoch observed. `h` locks the holder's session FOR SHARE and re-checks its expiry on the
 * newest version: a heartbeat (FOR NO KEY UPDATE of that row) that commits first keeps the claim.
 * `o` releases the old claim `expired`; the grant `t` reads `o`, so it runs after it, and the new
 * claim's insert finds the old one no longer live.
 */
const TAKE_OVER = `WITH s AS (
  SELECT id, host FROM sessions WHERE id = $2::bigint AND state = 'live' FOR KEY SHARE
), h AS (
  SELECT id, heartbeat_at, ttl_ms FROM sessions hs
  WHERE id = $3::bigint AND ${EXPIRED('hs')} AND EXISTS (SELECT 1 FROM s)
  FOR SHARE
), o AS (
  UPDATE claims SET released_at = ${NOW}, outcome = 'expired'
  FROM h, tasks tk
  WHERE tk.key = $1::text AND tk.state = 'open' AND claims.task_id = tk.id
    AND claims.session_id = h.id AND claims.epoch = $4::bigint AND claims.released_at IS NULL
  RETURNING claims.id, claims.task_id, claims.session_id, claims.epoch, claims.released_at, h.heartbeat_at,
    h.ttl_ms
), t AS (
  UPDATE tasks SET ${taskGrantSet('s.id', 'o.released_at')}
  FROM s, o
  WHERE tasks.id = o.task_id AND tasks.epoch = o.epoch AND tasks.state = 'open'
  RETURNING tasks.id, tasks.key, tasks.epoch, tasks.claimed_at, s.id AS session_id, s.host
), c AS (
  INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
  SELECT id, session_id, epoch, claimed_at, claimed_at FROM t
  RETURNING task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome
), a AS (
  ${insertAuditRows(`
    SELECT 0 AS part, ''::text AS seq, o.released_at AS at, 'claim:released'::text AS type, t.key AS task_key,
      NULL::bigint AS job_id, o.session_id, ${hostOf('o.session_id')} AS host, o.epoch,
      ${expiredDetail('o', '$2::bigint')} AS detail
    FROM o JOIN t ON t.id = o.task_id
    UNION ALL
    SELECT 1, '', t.claimed_at, 'claim:granted', t.key, NULL, t.session_id, t.host, t.epoch, '{}'::jsonb
    FROM t`)}
)
SELECT ${CLAIM_COLUMNS} FROM c JOIN t ON t.id = c.task_id`;

/** claims.acquire; also a run's claim that its start's statement could not grant (runs.ts). */
export async function acquireClaim(
  exec: PgExecutor,
  params: Parameters<Store['claims']['acquire']>[0],
): Promise<ClaimResult> {
  for (let attempt = 1; ; attempt++) {
    const row = await exec.one<ClaimRow>(GRANT, [params.key, params.session]);
    if (row !== undefined) return { ok: true, claim: toClaim(row), granted: true };
    const state = await claimState(exec, params.key, params.session);
    const lost = explainRefusedClaim(params, state);
    if (lost !== null && !(lost.ok === false && state.holder_expired === true)) return lost;
    if (lost !== null && state.session_id !== null && state.epoch !== null) {
      const taken = await exec.one<ClaimRow>(TAKE_OVER, [
        params.key,
        params.session,
        state.session_id,
        state.epoch,
      ]);
      if (taken !== undefined) return { ok: true, claim: toClaim(taken), granted: true };
    }
    // Released, renewed or taken between the statements: look again.
    assert(attempt < RACE_RETRY_MAX, 'a claim does not race forever');
  }
}

/** Why a grant matched nothing, in SQLite's order of checks; null when the task is free now. */
function explainRefusedClaim(
  params: Parameters<Store['claims']['acquire']>[0],
  state: ClaimStateRow,
): ClaimResult | null {
  if (state.task_id === null) {
    throw new NotFoundError('task', params.key, 'add it with `baton task add`');
  }
  if (state.session_state === null) throw sessionNotFound(params.session);
  if (state.session_state !== 'live') throw sessionNotLive(params.session, state.session_state);
  if (state.state !== null && state.state !== 'open' && state.state_at !== null) {
    const { state: taskState, state_at, state_by, state_reason } = state;
    throw taskStateRefusal(
      stateFacts({ key: params.key, state: taskState, state_at, state_by, state_reason }),
      'claim',
    );
  }
  const mine = liveClaimOf(params.key, state);
  if (mine !== null && mine.session === params.session) return { ok: true, claim: mine, granted: false };
  const holder = holderOf(state);
  return holder === null ? null : { ok: false, reason: 'held', holder };
}

/**
 * The release, guarded by (session, epoch): `c` releases the claim and `t` clears the task's
 * holder (which locks the task row), with the ledger row. Outcome done then moves the task by
 * `finish` in a second statement of the same transaction (task-state.ts, MOVE): its snapshot,
 * taken after the lock, sees any job an enqueue committed before it, so a done task keeps none.
 */
const RELEASE = `WITH c AS (
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
SELECT (SELECT count(*) FROM c) AS released, (SELECT count(*) FROM t) AS unlocked`;

/** The task of a claim released done finishes: `finish` by the releasing session ($2 by, $3 session). */
const FINISH_ON_RELEASE = moveSql(
  { action: 'finish', at: NOW, by: '$2::text', session: '$3::bigint', reason: '$4::text' },
  '',
);

async function release(
  exec: PgExecutor,
  params: Parameters<Store['claims']['release']>[0],
): Promise<FencedResult> {
  const values = [params.key, params.session, params.epoch, params.outcome];
  const released =
    params.outcome !== 'done'
      ? (await exec.one<{ released: number }>(RELEASE, values))?.released === 1
      : await exec.transaction(async (querier) => {
          const [row] = await querier.rows<{ released: number }>(RELEASE, values);
          if (row?.released !== 1) return false;
          await querier.rows(FINISH_ON_RELEASE, [
            params.key,
            `session ${params.session}`,
            params.session,
            null,
          ]);
          return true;
        });
  if (released) return { ok: true };
  const state = await claimState(exec, params.key, params.session);
  if (state.task_id === null) throw new NotFoundError('task', params.key);
  if (state.session_state === null) throw sessionNotFound(params.session);
  // An ended (or rescued) session is told so, as its heartbeat is: its claims ended with it.
  if (state.session_state !== 'live') {
    return { ok: false, reason: 'fenced', current: holderOf(state), sessionEnded: true };
  }
  return { ok: false, reason: 'fenced', current: holderOf(state) };
}
