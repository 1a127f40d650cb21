/**
 * What both engines share about tokens: a fresh secret and its hash, the check that a scope's
 * bindings fit it, and the row shape. The secret is 32 random bytes; only its sha256 is stored,
 * so a copy of the database opens nothing.
 */
import { FencedError, InvalidInputError, NotFoundError } from '../core/errors.js';
import type { SessionId } from '../core/session.js';
import { checkBindings, scopeToken, type Scope, type Token } from '../core/token.js';
import type { TokenCreateParams, TokenRun } from './token-store.js';
import { nodeCrypto } from '../os/node-crypto.js';

const TOKEN_PREFIX = 'baton_';

/** sha256 of the secret, hex: the only form the store keeps. */
export function hashSecret(secret: string): string {
  return nodeCrypto().createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** A new token's public id, its secret (shown once) and the secret's hash. */
export function freshToken(): { id: string; secret: string; hash: string } {
  const { randomBytes } = nodeCrypto();
  const secret = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { id: randomBytes(6).toString('hex'), secret, hash: hashSecret(secret) };
}

/** The bindings as stored: a session for `agent` only, a host for `host` only. */
export function bindingsOf(params: TokenCreateParams): {
  session: SessionId | null;
  host: string | null;
  run: TokenRun | null;
} {
  const session = params.session ?? null;
  const host = params.host ?? null;
  const run = params.run ?? null;
  if (params.scope !== 'agent' && run !== null) {
    throw new InvalidInputError(
      `${scopeToken(params.scope)} is not bound to a run`,
      'bind only agent tokens to a run',
    );
  }
  checkBindings(params.scope, { session: session !== null, host: host !== null });
  return { session, host, run };
}

/** Why an agent token cannot be bound to this session: unknown or no longer live. */
export function sessionRefusal(session: SessionId, state: string | null): Error {
  if (state === null) {
    return new NotFoundError('session', String(session), 'start one with `baton session start`');
  }
  return new FencedError(
    `session ${session} is ${state}: a token cannot be bound to it`,
    'bind the token to a live session',
  );
}

export interface TokenRow {
  id: string;
  scope: string;
  session_id: number | null;
  host: string | null;
  name: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  revoked_by: string | null;
  login_of: string | null;
  /** The key of the task of the token's run (its job's), where the statement reads it. */
  task_key?: string | null;
}

export const TOKEN_COLUMNS =
  'id, scope, session_id, host, name, created_at, expires_at, revoked_at, revoked_by, login_of';

/** The key of the task of the run a token (`alias`) was minted for: its job's; NULL without one. */
export const RUN_TASK_KEY = (alias: string): string =>
  `(SELECT k.key FROM jobs j JOIN tasks k ON k.id = j.task_id WHERE j.id = ${alias}.job_id) AS task_key`;

/** A row whose times are already milliseconds. */
export function toToken(row: TokenRow): Token {
  return {
    id: row.id,
    scope: row.scope as Scope,
    session: row.session_id,
    host: row.host,
    task: row.task_key ?? null,
    name: row.name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    revokedBy: row.revoked_by,
    loginOf: row.login_of ?? null,
  };
}

export const tokenNotFound = (id: string): NotFoundError =>
  new NotFoundError('token', id, 'list tokens with `baton token list`');

/** The ledger detail of `token:created`. */
export function createdDetail(token: Token): Record<string, unknown> {
  return {
    id: token.id,
    scope: token.scope,
    session: token.session,
    host: token.host,
    name: token.name,
    expiresAt: token.expiresAt,
    ...(token.loginOf === null ? {} : { loginOf: token.loginOf }),
  };
}
