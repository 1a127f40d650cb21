/**
 * Signing in to the dashboard with a token (issue 17): a browser sends no bearer header, so
 * `POST /login` checks the token it is given, mints a sign-in's own token from it (no wider, at
 * most 12 hours, coordinator/tokens.ts signIn) and keeps that one in a cookie that authenticates
 * like the header (auth.ts): HttpOnly (no script reads it), SameSite=Strict (no other site's page
 * sends it), Secure when the request came over https, Path=/, for the browser's session. The
 * secret signed in with is never a cookie: a browser sends a host's cookies to all its ports, so
 * any local server the browser visits (an agent's dev server on 127.0.0.1:5173) reads the cookie
 * (decision 0012, amendment "The sign-in cookie"). `POST /logout` revokes the sign-in's token and
 * clears the cookie. Under `--auth required`, a page asked for without a token is redirected here
 * (pageGate) instead of answered with JSON.
 */
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Token } from '../core/token.js';
import { loginPage } from '../dashboard/login-page.js';
import {
  AuthError,
  countRefusal,
  identify,
  loopbackHost,
  sameOrigin,
  tokenCookie,
  type AuthEnv,
} from './auth.js';

/** A local path to return to after signing in; anything else (another site, `//host`) is `/`. */
function localPath(next: unknown): string {
  if (typeof next !== 'string' || !next.startsWith('/') || next.startsWith('//') || next.includes('\\'))
    return '/';
  return /^[\x21-\x7e]{1,2000}$/.test(next) ? next : '/';
}

const overHttps = (context: Context): boolean =>
  new URL(context.req.url).protocol === 'https:' || context.req.header('x-forwarded-proto') === 'https';

export function loginRoutes(coordinator: Coordinator): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.get('/login', (context) => context.html(loginPage({ next: localPath(context.req.query('next')) })));
  app.post('/login', async (context) => {
    // Signing someone in to another's token from a foreign page is refused like any change.
    sameOrigin(context);
    const form: Record<string, unknown> = await context.req.parseBody().catch(() => ({}));
    const next = localPath(form['next']);
    const secret = typeof form['token'] === 'string' ? form['token'].trim() : '';
    const refuse = (error: string) => context.html(loginPage({ next, error }), 401);
    if (!/^[\x21-\x7e]{1,200}$/.test(secret)) {
      countRefusal('malformed');
      return refuse('enter a token (from `baton token create`)');
    }
    const check = await coordinator.tokens.verify(secret, 'POST /login');
    if (!check.ok) {
      countRefusal(check.reason);
      const why = check.reason === 'ended' ? 'its session or run has ended' : `it is ${check.reason}`;
      return refuse(`that token opens nothing: ${why}`);
    }
    const unfit = signInRefusal(check.token);
    if (unfit !== null) {
      countRefusal('malformed');
      return refuse(unfit);
    }
    await endSignIn(context, coordinator);
    dropLegacyCookie(context);
    const minted = await coordinator.tokens.signIn(check.token);
    setCookie(context, tokenCookie(context), minted.secret, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: overHttps(context),
      path: '/',
    });
    return context.redirect(next, 303);
  });
  app.post('/logout', async (context) => {
    await endSignIn(context, coordinator);
    dropLegacyCookie(context);
    deleteCookie(context, tokenCookie(context), { path: '/', secure: overHttps(context) });
    return context.html(loginPage({ next: '/', notice: 'Signed out.' }));
  });
  return app;
}

/**
 * Why a token that opens may not sign in, or null: a sign-in's own (it would mint more of itself,
 * each living 12 hours on), or a run's (bound to a job attempt no sign-in can copy).
 */
function signInRefusal(token: Token): string | null {
  if (token.loginOf !== null)
    return 'that is a dashboard sign-in, not a token: sign in with one from `baton token create`';
  if (token.task !== null)
    return "that is a run's agent token: sign in with one from `baton token create` (a viewer token sees every view)";
  return null;
}

/**
 * Revokes the sign-in the request's cookie holds, if it holds one that still opens: a harvested
 * copy of the cookie opens nothing after. Anything else in the cookie is left alone.
 */
async function endSignIn(context: Context, coordinator: Coordinator): Promise<void> {
  const secret = getCookie(context, tokenCookie(context));
  if (secret === undefined) return;
  const check = await coordinator.tokens.verify(secret, `${context.req.method} ${context.req.path}`);
  if (check.ok && check.token.loginOf !== null)
    await coordinator.tokens.revoke(check.token.id, { name: `sign-out of token ${check.token.loginOf}` });
}

/**
 * The cookie of a Baton before sign-ins had tokens of their own (`baton_token`, no port) held the
 * secret signed in with, and a browser sends it to every port of the host: deleted whenever a
 * browser that still has it comes by (a page, a fragment, sign-in, sign-out), never read.
 */
const LEGACY_TOKEN_COOKIE = 'baton_token';

function dropLegacyCookie(context: Context): void {
  if (getCookie(context, LEGACY_TOKEN_COOKIE) !== undefined)
    deleteCookie(context, LEGACY_TOKEN_COOKIE, { path: '/', secure: overHttps(context) });
}

/** A browser asking for a page (not the API, not a fragment): it gets the sign-in page, not JSON. */
function wantsPage(context: Context): boolean {
  const path = context.req.path;
  return (
    (context.req.method === 'GET' || context.req.method === 'HEAD') &&
    !/^\/(v1|ui|metrics|openapi\.json)(\/|$)/.test(path) &&
    (context.req.header('accept') ?? '').includes('text/html')
  );
}

/**
 * `--auth required`: every request past this point needs a token; a page asked for without
 * one (or with a cookie that no longer opens anything) is sent to /login, and the stale cookie
 * dropped.
 */
export function pageGate(coordinator: Coordinator) {
  return async (context: Context<AuthEnv>, next: () => Promise<void>): Promise<Response | void> => {
    dropLegacyCookie(context);
    try {
      await identify(context, coordinator, 'required');
    } catch (error) {
      if (!(error instanceof AuthError) || error.code !== 'unauthorized' || !wantsPage(context)) throw error;
      deleteCookie(context, tokenCookie(context), { path: '/' });
      const back = localPath(`${context.req.path}${new URL(context.req.url).search}`);
      return context.redirect(`/login?next=${encodeURIComponent(back)}`, 303);
    }
    await next();
  };
}

/**
 * Reads open: a page still shows who is signed in by cookie; a cookie that opens nothing is
 * ignored. A page or fragment asked for with neither a bearer token nor the sign-in cookie, or with
 * one that opens nothing, must name a loopback Host, as an open read of the API must (auth.ts
 * loopbackHost: DNS rebinding).
 */
export function pageReader(coordinator: Coordinator) {
  return async (context: Context<AuthEnv>, next: () => Promise<void>): Promise<void> => {
    if (
      !context.req.path.startsWith('/v1/') &&
      (context.req.method === 'GET' || context.req.method === 'HEAD')
    ) {
      dropLegacyCookie(context);
      const signedIn = getCookie(context, tokenCookie(context)) !== undefined;
      if (context.req.header('authorization') === undefined && !signedIn) loopbackHost(context);
      // A credential that opens nothing is no credential: the Host must then be a loopback name,
      // or a rebound page would read by sending any `Authorization` header or cookie at all.
      await identify(context, coordinator, 'reads-open').catch(() => {
        loopbackHost(context);
        context.set('token', null);
      });
    }
    await next();
  };
}
