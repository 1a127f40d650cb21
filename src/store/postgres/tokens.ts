/** API tokens on PostgreSQL (token-store.ts): each change one statement with its ledger row. */
import { assert } from '../../core/assert.js';
import type { TokenStore } from '../token-store.js';
import {
  RUN_TASK_KEY,
  bindingsOf,
  freshToken,
  hashSecret,
  sessionRefusal,
  tokenNotFound,
  toToken,
  type TokenRow,
} from '../token-secret.js';
import { EXPIRED, NOW, actorJson, hostOf } from './rows.js';
import type { PgExecutor } from './executor.js';

const msOf = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::float8`;
const COLUMNS = (alias: string): string =>
  `${alias}.id, ${alias}.scope, ${alias}.session_id, ${alias}.host, ${alias}.name, ${RUN_TASK_KEY(alias)}, ` +
  `${msOf(`${alias}.created_at`)} AS created_at,
   ${msOf(`${alias}.expires_at`)} AS expires_at, ${msOf(`${alias}.revoked_at`)} AS revoked_at,
   ${alias}.revoked_by, ${alias}.login_of`;

/**
 * A run-bound token's run is live (token-store.ts TokenRun): its job attempt is claimed or running
 * at the epoch it was minted for, that job's task is claimed at the token's claim epoch by the
 * token's session, unreleased, and both that session and the job's holder (the runner's session)
 * are live within their TTLs on the database clock. The holder too, because an agent may beat its
 * own session with its token: a runner that died would otherwise leave it a token for as long as
 * it kept beating.
 */
const RUN_LIVE = `SELECT 1 FROM jobs j
  JOIN claims c ON c.task_id = j.task_id AND c.epoch = t.claim_epoch
  JOIN sessions s ON s.id = c.session_id
  JOIN sessions r ON r.id = j.session_id
  WHERE j.id = t.job_id AND j.epoch = t.job_epoch AND j.status IN ('claimed', 'running')
    AND c.session_id = t.session_id AND c.released_at IS NULL AND NOT ${EXPIRED('s')}
    AND NOT ${EXPIRED('r')}`;

/** A sign-in's token (login_of set) opens only while the token presented for it is unrevoked and unexpired. */
const LOGIN_LIVE = `SELECT 1 FROM tokens p WHERE p.id = t.login_of AND p.revoked_at IS NULL
  AND (p.expires_at IS NULL OR p.expires_at > ${NOW})`;

const LIST_ALL = `SELECT ${COLUMNS('t')} FROM tokens t ORDER BY t.created_at, t.id`;
/**
 * The tokens verify could still accept: unrevoked (through `tokens_live`, migration 0041: the revoked
 * ones, most of them run tokens, have no entry), unexpired, their session live, their run live (a
 * runner killed before it revoked its run's token leaves one that opens nothing).
 */
export const LIST_LIVE = `SELECT ${COLUMNS('t')} FROM tokens t
  WHERE t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ${NOW})
    AND (t.session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = t.session_id AND s.state = 'live'))
    AND (t.job_id IS NULL OR EXISTS (${RUN_LIVE}))
    AND (t.login_of IS NULL OR EXISTS (${LOGIN_LIVE}))
  ORDER BY t.created_at, t.id`;

/** What `verify` reads of a token: who revoked it, its run, and whether it or its session or run is over. */
type VerifyRow = TokenRow & {
  job_id: string | null;
  expired: boolean;
  session_state: string | null;
  run_over: boolean;
  login_over: boolean;
};

export function postgresTokens(exec: PgExecutor): TokenStore['tokens'] {
  return {
    create: (params) => createToken(exec, params),
    verify: async (secret) => {
      const row = await exec.one<VerifyRow>(
        `SELECT ${COLUMNS('t')}, t.job_id, t.expires_at IS NOT NULL AND t.expires_at <= ${NOW} AS expired,
           (SELECT s.state FROM sessions s WHERE s.id = t.session_id) AS session_state,
           t.job_id IS NOT NULL AND NOT EXISTS (${RUN_LIVE}) AS run_over,
           t.login_of IS NOT NULL AND NOT EXISTS (${LOGIN_LIVE}) AS login_over
         FROM tokens t WHERE t.hash = $1::text`,
        [hashSecret(secret)],
      );
      if (row === undefined) return { ok: false, reason: 'unknown' };
      // A person's revocation first, then ended (token-store.ts verify): the runner's at its run's end is routine.
      // Only a run's token (job_id set) is ever revoked by a runner: one without, a person's revocation.
      if (row.revoked_at !== null && (row.revoked_by !== null || row.job_id === null))
        return { ok: false, reason: 'revoked', id: row.id, byPerson: true };
      if (row.session_id !== null && row.session_state !== 'live') return { ok: false, reason: 'ended' };
      if (row.run_over) return { ok: false, reason: 'ended' };
      if (row.revoked_at !== null) return { ok: false, reason: 'revoked', id: row.id };
      if (row.expired) return { ok: false, reason: 'expired', id: row.id };
      // A sign-in expires no later than its token (token-store.ts loginOf): what is left is its revocation.
      if (row.login_over) return { ok: false, reason: 'revoked', id: row.id };
      return { ok: true, token: toToken(row) };
    },
    list: async (params) =>
      (await exec.rows<TokenRow>(params?.all === true ? LIST_ALL : LIST_LIVE)).map(toToken),
    get: async (id) => {
      const row = await exec.one<TokenRow>(`SELECT ${COLUMNS('t')} FROM tokens t WHERE t.id = $1::text`, [
        id,
      ]);
      return row === undefined ? null : toToken(row);
    },
    revoke: async ({ id, actor }) => {
      const row = await exec.one<{ known: number; revoked: number }>(
        `WITH t AS (SELECT id FROM tokens WHERE id = $1::text),
         r AS (
           UPDATE tokens SET revoked_at = ${NOW}, revoked_by = $2::text WHERE id = $1::text AND revoked_at IS NULL
           RETURNING id, revoked_at
         ), a AS (
           INSERT INTO audit_events (at, type, detail)
           SELECT revoked_at, 'token:revoked', jsonb_build_object('id', id) || ${actorJson('$2')} FROM r
         )
         SELECT (SELECT count(*) FROM t)::int AS known, (SELECT count(*) FROM r)::int AS revoked`,
        [id, actor ?? null],
      );
      if (row === undefined || row.known === 0) throw tokenNotFound(id);
      return row.revoked === 1;
    },
    refused: async (refusal) => {
      await exec.rows(
        `INSERT INTO audit_events (at, type, task_key, job_id, session_id, host, detail)
         VALUES (${NOW}, 'auth:refused', $5::text, $6::bigint, $7::bigint, ${hostOf('$7::bigint')},
           jsonb_build_object('token', $1::text, 'route', $2::text, 'target', $3::text, 'reason', $4::text))`,
        [
          refusal.token,
          refusal.route,
          refusal.target,
          refusal.reason,
          refusal.key ?? null,
          refusal.jobId ?? null,
          refusal.session ?? null,
        ],
      );
    },
  };
}

type Create = TokenStore['tokens']['create'];

/** Makes a token, bound to a live session if one is named, and audits it in the same statement. */
export async function createToken(exec: PgExecutor, params: Parameters<Create>[0]): ReturnType<Create> {
  const { session, host, run: bound } = bindingsOf(params);
  const fresh = freshToken();
  const row = await exec.one<Partial<TokenRow> & { session_state: string | null }>(
    `WITH n AS (SELECT ${NOW} AS t),
         s AS (SELECT state FROM sessions WHERE id = $4::bigint),
         ins AS (
           INSERT INTO tokens (id, hash, scope, session_id, host, name, created_at, expires_at,
             job_id, job_epoch, claim_epoch, login_of)
           SELECT $1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text, n.t,
             -- A sign-in never outlives the token presented for it (least() passes over a NULL).
             least(n.t + $7::float8 * interval '1 millisecond',
               (SELECT p.expires_at FROM tokens p WHERE p.id = $12::text)),
             $8::bigint, $9::bigint, $10::bigint, $12::text
           FROM n WHERE $4::bigint IS NULL OR (SELECT state FROM s) = 'live'
           RETURNING *
         ), a AS (
           INSERT INTO audit_events (at, type, detail)
           SELECT created_at, 'token:created', jsonb_build_object('id', id, 'scope', scope,
             'session', session_id, 'host', host, 'name', name, 'expiresAt', ${msOf('expires_at')})
             || CASE WHEN login_of IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('loginOf', login_of) END
             || ${actorJson('$11')}
           FROM ins
         )
         SELECT ${COLUMNS('ins')}, (SELECT state FROM s) AS session_state
         FROM (SELECT 1) one LEFT JOIN ins ON true`,
    [
      fresh.id,
      fresh.hash,
      params.scope,
      session,
      host,
      params.name ?? null,
      params.ttlMs ?? null,
      bound?.jobId ?? null,
      bound?.jobEpoch ?? null,
      bound?.claimEpoch ?? null,
      params.actor ?? null,
      params.loginOf ?? null,
    ],
  );
  assert(row !== undefined, 'the statement answers one row');
  if (row.id === null || row.id === undefined) throw sessionRefusal(session ?? 0, row.session_state);
  return { token: toToken(row as TokenRow), secret: fresh.secret };
}
