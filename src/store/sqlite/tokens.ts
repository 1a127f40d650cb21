/** API tokens on SQLite (token-store.ts): each change one write transaction with its ledger row. */
import type { TokenCreateParams, TokenCreated, TokenStore } from '../token-store.js';
import {
  RUN_TASK_KEY,
  TOKEN_COLUMNS,
  bindingsOf,
  createdDetail,
  freshToken,
  hashSecret,
  sessionRefusal,
  tokenNotFound,
  toToken,
  type TokenRow,
} from '../token-secret.js';
import type { TokenCheck } from '../../core/token.js';
import { withActor } from '../actor.js';
import { appendAudit, EXPIRED } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';

/**
 * A run-bound token's run is live (token-store.ts TokenRun): its job attempt is claimed or running
 * at the epoch it was minted for, that job's task is claimed at the token's claim epoch by the
 * token's session, unreleased, and both that session and the job's holder (the runner's session)
 * are live within their TTLs (@now, the database clock). The holder too, because an agent may beat
 * its own session with its token: a runner that died would otherwise leave it a token for as long
 * as it kept beating.
 */
const RUN_LIVE = `SELECT 1 FROM jobs j
  JOIN claims c ON c.task_id = j.task_id AND c.epoch = tokens.claim_epoch
  JOIN sessions s ON s.id = c.session_id
  JOIN sessions r ON r.id = j.session_id
  WHERE j.id = tokens.job_id AND j.epoch = tokens.job_epoch AND j.status IN ('claimed', 'running')
    AND c.session_id = tokens.session_id AND c.released_at IS NULL
    AND NOT ${EXPIRED('s')} AND NOT ${EXPIRED('r')}`;

/** A sign-in's token (login_of set) opens only while the token presented for it is unrevoked and unexpired. */
const LOGIN_LIVE = `SELECT 1 FROM tokens p WHERE p.id = tokens.login_of AND p.revoked_at IS NULL
  AND (p.expires_at IS NULL OR p.expires_at > @now)`;

const SELECT = `SELECT ${TOKEN_COLUMNS}, ${RUN_TASK_KEY('tokens')} FROM tokens`;
const LIST_ALL = `${SELECT} ORDER BY created_at, id`;
/**
 * The tokens verify could still accept: unrevoked (through `tokens_live`, migration 0041: the revoked
 * ones, most of them run tokens, have no entry), unexpired, their session live, their run live (a
 * runner killed before it revoked its run's token leaves one that opens nothing).
 */
export const LIST_LIVE = `${SELECT} INDEXED BY tokens_live
  WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > @now)
    AND (session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = tokens.session_id AND s.state = 'live'))
    AND (job_id IS NULL OR EXISTS (${RUN_LIVE}))
    AND (login_of IS NULL OR EXISTS (${LOGIN_LIVE}))
  ORDER BY created_at, id`;

export function sqliteTokens(exec: SqliteExecutor): Sync<TokenStore['tokens']> {
  return {
    create: (params) => createToken(exec, params),
    verify: (secret) => exec.read(() => verifyToken(exec, secret)),
    list: (params) =>
      exec.read(() =>
        (
          exec
            .prepare(params?.all === true ? LIST_ALL : LIST_LIVE)
            .all(params?.all === true ? {} : { now: exec.now() }) as TokenRow[]
        ).map(toToken),
      ),
    get: (id) =>
      exec.read(() => {
        const row = exec.prepare(`${SELECT} WHERE id = ?`).get(id) as TokenRow | undefined;
        return row === undefined ? null : toToken(row);
      }),
    revoke: ({ id, actor }) =>
      exec.write(() => {
        const row = exec.prepare('SELECT revoked_at FROM tokens WHERE id = ?').get(id) as
          { revoked_at: number | null } | undefined;
        if (row === undefined) throw tokenNotFound(id);
        if (row.revoked_at !== null) return false;
        const now = exec.now();
        exec
          .prepare('UPDATE tokens SET revoked_at = ?, revoked_by = ? WHERE id = ?')
          .run(now, actor ?? null, id);
        appendAudit(exec, { at: now, type: 'token:revoked', detail: withActor({ id }, actor) });
        return true;
      }),
    refused: (refusal) =>
      exec.write(() => {
        appendAudit(exec, {
          at: exec.now(),
          type: 'auth:refused',
          key: refusal.key ?? null,
          jobId: refusal.jobId ?? null,
          session: refusal.session ?? null,
          detail: {
            token: refusal.token,
            route: refusal.route,
            target: refusal.target,
            reason: refusal.reason,
          },
        });
      }),
  };
}

/** A new token, bound to a live session when it names one; the secret is returned once, here. */
function createToken(exec: SqliteExecutor, params: TokenCreateParams): TokenCreated {
  bindingsOf(params); // refused before the write: bad bindings wait for no lock
  const fresh = freshToken();
  return exec.write(() => createTokenIn(exec, params, fresh));
}

/** createToken's writes, inside the caller's write transaction (runs.begin's too). */
export function createTokenIn(
  exec: SqliteExecutor,
  params: TokenCreateParams,
  fresh = freshToken(),
): TokenCreated {
  const { session, host, run: bound } = bindingsOf(params);
  const now = exec.now();
  if (session !== null) {
    const row = exec.prepare('SELECT state FROM sessions WHERE id = ?').get(session) as
      { state: string } | undefined;
    if (row?.state !== 'live') throw sessionRefusal(session, row?.state ?? null);
  }
  const loginOf = params.loginOf ?? null;
  let expiresAt = params.ttlMs === null || params.ttlMs === undefined ? null : now + params.ttlMs;
  if (loginOf !== null) {
    // A sign-in never outlives the token presented for it (token-store.ts loginOf).
    const of = exec.prepare('SELECT expires_at FROM tokens WHERE id = ?').get(loginOf) as
      { expires_at: number | null } | undefined;
    if (of !== undefined && of.expires_at !== null)
      expiresAt = expiresAt === null ? of.expires_at : Math.min(expiresAt, of.expires_at);
  }
  const row = exec
    .prepare(
      `INSERT INTO tokens (id, hash, scope, session_id, host, name, created_at, expires_at,
           job_id, job_epoch, claim_epoch, login_of)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${TOKEN_COLUMNS}`,
    )
    .get(
      fresh.id,
      fresh.hash,
      params.scope,
      session,
      host,
      params.name ?? null,
      now,
      expiresAt,
      bound?.jobId ?? null,
      bound?.jobEpoch ?? null,
      bound?.claimEpoch ?? null,
      loginOf,
    ) as TokenRow;
  const task =
    bound === null
      ? null
      : (exec.prepare(`SELECT ${RUN_TASK_KEY('tokens')} FROM tokens WHERE id = ?`).get(fresh.id) as
          { task_key: string | null } | undefined);
  const token = toToken({ ...row, task_key: task?.task_key ?? null });
  const detail = withActor(createdDetail(token), params.actor);
  appendAudit(exec, { at: now, type: 'token:created', detail });
  return { token, secret: fresh.secret };
}

/** The answer of `verify` for a secret (token-store.ts verify). */
function verifyToken(exec: SqliteExecutor, secret: string): TokenCheck {
  const row = exec
    .prepare(
      `SELECT ${TOKEN_COLUMNS}, ${RUN_TASK_KEY('tokens')}, tokens.job_id,
           (SELECT s.state FROM sessions s WHERE s.id = tokens.session_id) AS session_state,
           tokens.job_id IS NOT NULL AND NOT EXISTS (${RUN_LIVE}) AS run_over,
           tokens.login_of IS NOT NULL AND NOT EXISTS (${LOGIN_LIVE}) AS login_over
         FROM tokens WHERE hash = @hash`,
    )
    .get({ hash: hashSecret(secret), now: exec.now() }) as
    | (TokenRow & {
        job_id: number | null;
        session_state: string | null;
        run_over: number;
        login_over: number;
      })
    | undefined;
  if (row === undefined) return { ok: false, reason: 'unknown' } as const;
  // A person's revocation first, then ended (token-store.ts verify): the runner's at its run's end is routine.
  // Only a run's token (job_id set) is ever revoked by a runner: one without, a person's revocation.
  if (row.revoked_at !== null && (row.revoked_by !== null || row.job_id === null))
    return { ok: false, reason: 'revoked', id: row.id, byPerson: true } as const;
  if ((row.session_id !== null && row.session_state !== 'live') || row.run_over === 1)
    return { ok: false, reason: 'ended' } as const;
  if (row.revoked_at !== null) return { ok: false, reason: 'revoked', id: row.id } as const;
  if (row.expires_at !== null && row.expires_at <= exec.now())
    return { ok: false, reason: 'expired', id: row.id } as const;
  // A sign-in expires no later than its token (token-store.ts loginOf): what is left is its revocation.
  if (row.login_over === 1) return { ok: false, reason: 'revoked', id: row.id } as const;
  return { ok: true, token: toToken(row) } as const;
}
