/**
 * Who is asking, and may they. `Authorization: Bearer <token>` names a token (coordinator/tokens);
 * core/token.ts's table says what its scope may do. Reads on a loopback bind need no token unless
 * the server runs with `--auth required`; every mutation needs one. A request beyond its scope is
 * refused with 403 before it touches anything, and the refusal is written to the ledger as
 * `auth:refused` with the token, the route and the target. What an allowed request writes is
 * credited to its token (store/actor.ts).
 */
import type { Context } from 'hono';
import type { Coordinator } from '../coordinator/coordinator.js';
import { actingAs } from '../store/actor.js';
import { authorize, type Action, type Target, type Token } from '../core/token.js';
import type { Actor } from '../core/task.js';

export type AuthMode = 'reads-open' | 'required';

/** A refusal of the HTTP adapter's own: no token or a bad one (401), beyond its scope (403). */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly code: 'unauthorized' | 'forbidden',
    message: string,
    readonly hint: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}

export interface AuthEnv {
  Variables: { token: Token | null };
}

const BEARER = /^Bearer ([\x21-\x7e]+)$/;

/** Middleware: verifies the bearer token, if any, and requires one where the mode says so. */
export function authenticate(coordinator: Coordinator, mode: AuthMode) {
  return async (c: Context<AuthEnv>, next: () => Promise<void>): Promise<void> => {
    const header = c.req.header('authorization');
    const read = c.req.method === 'GET' || c.req.method === 'HEAD';
    if (header === undefined) {
      if (read && mode === 'reads-open') {
        c.set('token', null);
        return next();
      }
      throw new AuthError(
        'unauthorized',
        read ? 'this server requires a token for reads (--auth required)' : 'a change needs a token',
        'send Authorization: Bearer <token>; make one with `baton token create`',
      );
    }
    const secret = BEARER.exec(header)?.[1];
    if (secret === undefined) {
      throw new AuthError(
        'unauthorized',
        'the Authorization header is not `Bearer <token>`',
        'send Bearer <token>',
      );
    }
    const check = await coordinator.tokens.verify(secret);
    if (!check.ok) {
      throw new AuthError(
        'unauthorized',
        `the token is ${check.reason}`,
        check.reason === 'unknown' ? 'check the token you copied' : 'ask an operator for a new token',
      );
    }
    c.set('token', check.token);
    return next();
  };
}

/** What a request acts on, for the check and, if refused, the ledger row. */
export interface Subject extends Target {
  /** In words: `claim k1 for session 7`. */
  readonly what: string;
  readonly key?: string | undefined;
  readonly jobId?: number | undefined;
}

/**
 * Checks the request's token against the action and target; on refusal writes `auth:refused`
 * and throws 403. `hostOf` finds a session's host, asked only for a host token.
 */
export async function allow(
  c: Context<AuthEnv>,
  coordinator: Coordinator,
  action: Action,
  subject: Subject,
  hostOf?: () => Promise<string | null>,
): Promise<void> {
  const token = c.get('token');
  if (token === null) {
    if (action === 'read') return;
    throw new AuthError('unauthorized', 'a change needs a token', 'send Authorization: Bearer <token>');
  }
  const target: Target =
    token.scope === 'host' && subject.host === undefined && hostOf !== undefined
      ? { ...subject, host: await hostOf().catch(() => null) }
      : subject;
  const verdict = authorize(token, action, target);
  if (verdict.ok) return;
  const route = `${c.req.method} ${c.req.path}`;
  await actingAs(token.id, () =>
    coordinator.tokens.refused({
      token: token.id,
      route,
      target: subject.what,
      reason: verdict.reason,
      key: subject.key,
      jobId: subject.jobId,
      session: token.session,
    }),
  );
  throw new AuthError(
    'forbidden',
    `refused: ${verdict.reason}`,
    `ask an operator for a token that may ${action}`,
    {
      token: token.id,
      scope: token.scope,
      route,
      target: subject.what,
    },
  );
}

/** Runs the work with every ledger row it writes credited to the request's token. */
export function acting<T>(c: Context<AuthEnv>, work: () => Promise<T>): Promise<T> {
  const token = c.get('token');
  return token === null ? work() : actingAs(token.id, work);
}

/** Who acted, for the lifecycle's state rows: the token, by id and name. */
export function actorOf(c: Context<AuthEnv>, session?: number): Actor {
  const token = c.get('token');
  const name =
    token === null ? 'anonymous' : `token ${token.id}${token.name === null ? '' : ` (${token.name})`}`;
  return session === undefined ? { name } : { name, session };
}
