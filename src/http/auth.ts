/**
 * Who is asking, and may they. `Authorization: Bearer <token>` names a token (coordinator/tokens);
 * core/token.ts's table says what its scope may do. Reads on a loopback bind need no token unless
 * the server runs with `--auth required`; every mutation needs one. A request beyond its scope is
 * refused with 403 before it touches anything, and the refusal is written to the ledger as
 * `auth:refused` with the token, the route and the target (one row a minute per token and request,
 * coordinator/refusal-cap.ts). What an allowed request writes is
 * credited to its token (store/actor.ts).
 */
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Coordinator } from '../coordinator/coordinator.js';
import { actingAs } from '../store/actor.js';
import { KEY_LENGTH_MAX } from '../core/validate.js';
import { ACTION_WORDS, authorize, OPEN_READS, type Action, type Target, type Token } from '../core/token.js';
import type { Actor } from '../core/task.js';

export type AuthMode = 'reads-open' | 'required';

/**
 * Why a request was refused, the label of `baton_auth_refused_total{reason}`: no token where one is
 * needed, a header or cookie that is not one, a secret no token has, a token revoked, expired or
 * whose session or run ended (401), an open read under a name that is not loopback (401), a change
 * signed in by cookie from another origin (403), a request beyond its token's scope (403).
 */
const REFUSED_REASONS = [
  'missing',
  'malformed',
  'unknown',
  'revoked',
  'expired',
  'ended',
  'host',
  'origin',
  'scope',
] as const;
export type RefusedReason = (typeof REFUSED_REASONS)[number];

/** This process's refusals by reason since it started, as /metrics reads them. */
const refusedCounts = new Map<RefusedReason, number>(REFUSED_REASONS.map((reason) => [reason, 0]));

/** Counts one refusal (every AuthError, and a sign-in that opens nothing). */
export function countRefusal(reason: RefusedReason): void {
  refusedCounts.set(reason, (refusedCounts.get(reason) ?? 0) + 1);
}

/** How many requests this process refused, by reason. */
export const refusalsByReason = (): ReadonlyMap<RefusedReason, number> => refusedCounts;

/**
 * A refusal of the HTTP adapter's own: no token or a bad one (401), beyond its scope (403). Made
 * only to be thrown and answered, so it is counted when made (countRefusal).
 */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly code: 'unauthorized' | 'forbidden',
    readonly reason: RefusedReason,
    message: string,
    readonly hint: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    countRefusal(reason);
  }
}

export interface AuthEnv {
  Variables: { token: Token | null };
}

/**
 * The name of the dashboard's sign-in cookie (login.ts), with the port the browser reached this
 * server at (`baton_token_7070`): a browser sends a host's cookies to every port of it, so two
 * servers on one host would otherwise overwrite each other's. It holds a sign-in's own token,
 * never the secret signed in with, HttpOnly and SameSite=Strict, and authenticates like
 * `Authorization: Bearer`. A change it authenticates must also come from this server's own
 * pages: its Origin header must name this host (sameOrigin).
 */
export function tokenCookie(context: Context): string {
  const url = new URL(context.req.url);
  return `baton_token_${url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port}`;
}

const BEARER = /^Bearer ([\x21-\x7e]+)$/;
const COOKIE_VALUE = /^[\x21-\x7e]{1,200}$/;

/** Middleware: verifies the bearer token (or the sign-in cookie), requiring one where the mode says so. */
export function authenticate(coordinator: Coordinator, mode: AuthMode) {
  return async (context: Context<AuthEnv>, next: () => Promise<void>): Promise<void> => {
    // Under --auth required the page gate (login.ts) has already verified this request's token.
    if ((context.get('token') ?? null) === null) await identify(context, coordinator, mode);
    return next();
  };
}

const isRead = (context: Context): boolean => context.req.method === 'GET' || context.req.method === 'HEAD';

/**
 * Sets the request's token from its bearer header, else its sign-in cookie; throws AuthError
 * when there is none and the mode needs one, or when what was presented opens nothing.
 */
export async function identify(
  context: Context<AuthEnv>,
  coordinator: Coordinator,
  mode: AuthMode,
): Promise<void> {
  const header = context.req.header('authorization');
  const read = isRead(context);
  const cookie = header === undefined ? getCookie(context, tokenCookie(context)) : undefined;
  if (header === undefined && cookie === undefined) {
    if (read && mode === 'reads-open') {
      loopbackHost(context);
      context.set('token', null);
      return;
    }
    throw new AuthError(
      'unauthorized',
      'missing',
      read ? 'this server requires a token for reads (--auth required)' : 'a change needs a token',
      'send Authorization: Bearer <token>, or sign in at /login; make one with `baton token create`',
    );
  }
  const secret = header === undefined ? COOKIE_VALUE.exec(cookie ?? '')?.[0] : bearerSecret(header);
  if (secret === undefined) {
    throw new AuthError(
      'unauthorized',
      'malformed',
      header === undefined
        ? 'the sign-in cookie is not a token'
        : 'the Authorization header is not `Bearer <token>`',
      header === undefined ? 'sign in again at /login' : 'send Bearer <token>',
    );
  }
  if (header === undefined && !read) sameOrigin(context);
  const token = await verified(coordinator, secret, `${context.req.method} ${context.req.path}`);
  context.set('token', carried(token, header === undefined));
}

/**
 * A dashboard sign-in's token (loginOf) opens by the sign-in cookie alone, and every other token
 * by the bearer header alone; else AuthError (401). The cookie is sent to every page on this
 * host's other ports too (login.ts): what it holds opens nothing the cookie could not, where a
 * change by cookie must come from this server's pages (sameOrigin). And a token of the CLI's is
 * never a cookie: none is set but by /login.
 */
export function carried(token: Token, byCookie: boolean): Token {
  if ((token.loginOf !== null) === byCookie) return token;
  throw new AuthError(
    'unauthorized',
    'malformed',
    byCookie
      ? 'the sign-in cookie holds a token, not a dashboard sign-in'
      : `token ${token.id} is a dashboard sign-in's: it opens the dashboard by its cookie alone, not as a bearer token`,
    byCookie ? 'sign in again at /login' : 'send a token from `baton token create`',
  );
}

/** The token a secret opens; AuthError (401) when it opens nothing. */
export async function verified(coordinator: Coordinator, secret: string, route?: string): Promise<Token> {
  const check = await coordinator.tokens.verify(secret, route);
  if (check.ok) return check.token;
  const ended = check.reason === 'ended';
  throw new AuthError(
    'unauthorized',
    check.reason,
    ended
      ? "the token's session or run has ended (ended, or rescued as stale when its heartbeats stopped)"
      : `the token is ${check.reason}`,
    check.reason === 'unknown'
      ? 'check the token you copied'
      : ended
        ? "a run's token dies with its run; for a session's, start a session that stays live " +
          '(`baton session start --ttl 8h`, or heartbeat it) and create a token for it'
        : 'ask an operator for a new token',
  );
}

/** The secret of an `Authorization: Bearer <token>` header; undefined when it is not one. */
export const bearerSecret = (header: string): string | undefined => BEARER.exec(header)?.[1];

/** Host names that only ever name this machine: a page elsewhere cannot make them resolve to itself. */
const LOOPBACK_NAME = /^(localhost|.+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * An open read (no token, on a loopback bind) must name this machine in its Host header. A web
 * page whose own name an attacker rebinds to 127.0.0.1 (DNS rebinding) reaches this server as that
 * name, and would otherwise read tasks, the ledger and live agent output as its own origin; it
 * cannot send a token it does not have, nor make a browser send a loopback Host for its origin.
 * A request with no Host header (no browser sends one) is not refused.
 */
export function loopbackHost(context: Context): void {
  const host = context.req.header('host');
  if (host === undefined) return;
  let name: string | null = null;
  try {
    name = new URL(`http://${host}`).hostname;
  } catch {
    name = null;
  }
  if (name !== null && LOOPBACK_NAME.test(name)) return;
  throw new AuthError(
    'unauthorized',
    'host',
    `reads without a token are open to loopback names only, and Host ${host} is not one`,
    'reach this server as 127.0.0.1 or localhost, or send Authorization: Bearer <token>',
  );
}

/**
 * A change authenticated by the cookie alone must come from this server's pages: its Origin
 * header (which browsers send with every POST, and which a page cannot forge) must name this
 * host. With SameSite=Strict, a cross-site request carries no cookie anyway; this is the second
 * lock, for a browser that ignores SameSite. Refused without a ledger row: nobody can tell who
 * sent it.
 */
export function sameOrigin(context: Context): void {
  const origin = context.req.header('origin');
  const host = context.req.header('host');
  let from: string | null = null;
  try {
    from = origin === undefined ? null : new URL(origin).host;
  } catch {
    from = null;
  }
  if (from === null || host === undefined || from !== host) {
    throw new AuthError(
      'forbidden',
      'origin',
      `refused: a change signed in by cookie must come from this server's pages ` +
        `(Origin ${origin ?? 'absent'}, host ${host ?? 'absent'})`,
      'use the dashboard served here, or send Authorization: Bearer <token>',
    );
  }
}

/** What a request acts on, for the check and, if refused, the ledger row. */
export interface Subject extends Target {
  /** In words: `claim k1 for session 7`. */
  readonly what: string;
  readonly jobId?: number | undefined;
}

/**
 * Checks the request's token against the action and target; on refusal writes `auth:refused`
 * and throws 403. `hostOf` finds a session's host, asked only for a host token.
 */
export function allow(
  context: Context<AuthEnv>,
  coordinator: Coordinator,
  action: Action,
  subject: Subject,
  hostOf?: () => Promise<string | null>,
): Promise<void> {
  return allowAsker(coordinator, askerOf(context), action, subject, hostOf);
}

/**
 * Who asks, apart from the request that carries it: its token, and its route in words
 * (`POST /v1/claims/k1`) for a refusal's ledger row, made only when one is written.
 */
export interface Asker {
  readonly token: Token | null;
  readonly route: () => string;
}

export const askerOf = (context: Context<AuthEnv>): Asker => ({
  token: context.get('token'),
  route: () => `${context.req.method} ${context.req.path}`,
});

/** `allow` for an asker (claims.ts, for the Hono routes and the fast path alike). */
export async function allowAsker(
  coordinator: Coordinator,
  asker: Asker,
  action: Action,
  subject: Subject,
  hostOf?: () => Promise<string | null>,
): Promise<void> {
  const token = asker.token;
  if (token === null) {
    if (OPEN_READS.includes(action)) return;
    throw new AuthError(
      'unauthorized',
      'missing',
      'a change needs a token',
      'send Authorization: Bearer <token>',
    );
  }
  const target: Target =
    token.scope === 'host' && subject.host === undefined && hostOf !== undefined
      ? { ...subject, host: await hostOf().catch(() => null) }
      : subject;
  const verdict = authorize(token, action, target);
  if (verdict.ok) return;
  // The ledger keeps what was asked for, but a NUL (which PostgreSQL's text cannot hold) is
  // written as U+FFFD, and a key holding one, or longer than a key may be (whose index entry
  // PostgreSQL refused past 8 kB, a 500 with no row), is never a valid key and is not named as
  // the row's task: the target's words (at most 500 characters) still say what was asked.
  const clean = (text: string): string => text.split('\u0000').join('\uFFFD');
  const key = subject.key;
  const named = key === undefined || key.includes('\u0000') || key.length > KEY_LENGTH_MAX ? undefined : key;
  const route = clean(asker.route());
  // Capped, and never thrown: a row that cannot be written is a line on stderr (coordinator/tokens.ts).
  await coordinator.tokens.refused({
    token: token.id,
    route,
    target: clean(subject.what),
    reason: verdict.reason,
    key: named,
    jobId: subject.jobId,
    session: token.session,
  });
  throw new AuthError(
    'forbidden',
    'scope',
    `refused: ${verdict.reason}`,
    verdict.fix ?? `ask an operator for a token that may ${ACTION_WORDS[action]}`,
    {
      token: token.id,
      scope: token.scope,
      route,
      target: subject.what,
    },
  );
}

/** The host a session runs on, for `allow`: asked only when a host-scoped token needs it. */
export const sessionHost = (coordinator: Coordinator, session: number) => (): Promise<string> =>
  coordinator.getSession(session).then((found) => found.host);

/** Runs the work with every ledger row it writes credited to the request's token. */
export function acting<T>(context: Context<AuthEnv>, work: () => Promise<T>): Promise<T> {
  return actingWith(context.get('token'), work);
}

/** `acting` for a token in hand. */
export function actingWith<T>(token: Token | null, work: () => Promise<T>): Promise<T> {
  return token === null ? work() : actingAs(token.id, work);
}

/** Who acted, for the lifecycle's state rows: the token, by id and name. */
export function actorOf(context: Context<AuthEnv>, session?: number): Actor {
  const token = context.get('token');
  const name =
    token === null ? 'anonymous' : `token ${token.id}${token.name === null ? '' : ` (${token.name})`}`;
  return session === undefined ? { name } : { name, session };
}
