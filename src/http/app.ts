/**
 * The HTTP surface of one process: the JSON API under /v1 (routes-core.ts, routes-more.ts), its
 * OpenAPI 3.1 document at /openapi.json built from the same schemas, /healthz and /readyz,
 * /metrics (metrics.ts) and the dashboard at / (mounted last). Every answer that is not a success
 * is the error body of errors.ts; bad input never reaches the coordinator and is never a 500.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { SignedIn } from '../dashboard/login-page.js';
import type { Registry } from 'prom-client';
import type { Coordinator } from '../coordinator/coordinator.js';
import type { DashboardDeps } from '../dashboard/deps.js';
import { dashboardAssets, dashboardRoutes } from '../dashboard/routes.js';
import { AuthError, authenticate, identify, type AuthEnv, type AuthMode } from './auth.js';
import { mayReadOutput } from './job-output.js';
import type { Job } from '../core/job.js';
import { loginRoutes, pageGate, pageReader } from './login.js';
import { errorBody, errorResponse } from './errors.js';
import { quoted } from '../core/text.js';
import { newApi } from './kit.js';
import { metricsRoutes } from './metrics.js';
import { coreRoutes } from './routes-core.js';
import { moreRoutes } from './routes-more.js';
import { agentRoutes } from './routes-agent.js';
import { cliRoutes } from './routes-cli.js';
import { logRoutes } from './routes-log.js';

const API_VERSION = '1';

/**
 * The largest body a route of Baton's own takes, in bytes: the largest a valid request needs is a
 * finish-batch of 1,000 members with 500-character reasons, about 3 MiB even fully escaped. Without
 * a bound, a holder of any token (an agent's) sent a body of hundreds of MB, which was read whole
 * into memory before the schema refused it: a few at once take `baton up`, and every agent it
 * runs, down with it.
 */
export const BODY_MAX = 8 * 1024 * 1024;
/** GitHub caps a webhook delivery at 25 MB; the webhook reads it whole to check its signature. */
export const WEBHOOK_BODY_MAX = 25 * 1024 * 1024;

/** Refuses a body over `max` bytes with 413, counting what is sent when no Content-Length says. */
const limitBody = (max: number): MiddlewareHandler =>
  bodyLimit({
    maxSize: max,
    onError: (context) =>
      context.json(
        errorBody(
          'payload_too_large',
          `the body is over ${max} bytes`,
          'send a smaller body: see /openapi.json for what the route takes',
        ),
        413,
      ),
  });

/**
 * A path or query whose %-escapes do not decode (`%FF`, a bare `%`) is refused with 400: Hono
 * would take the segment as it is, so `/v1/tasks/a%FFb/close` closed the task whose key is the
 * text `a%FFb`, which is written `a%25FFb`.
 */
const decodableUrl: MiddlewareHandler = async (context, next) => {
  const url = context.req.url;
  const at = url.indexOf('/', url.indexOf('//') + 2);
  const target = at === -1 ? '' : url.slice(at);
  try {
    decodeURIComponent(target);
  } catch {
    return context.json(
      errorBody(
        'invalid_input',
        `the request's path or query has a %-escape that is not UTF-8: ${quoted(target)}`,
        "percent-encode each value's UTF-8 bytes (encodeURIComponent), a % itself as %25",
      ),
      400,
    );
  }
  return next();
};

/** The webhook's path on a server that mounts none (httpApp). */
const noWebhook = (context: Context) =>
  context.json(
    errorBody(
      'not_found',
      'this server serves no GitHub webhook',
      'start it with --github owner/repo and GITHUB_WEBHOOK_SECRET set (baton serve or baton up)',
    ),
    404,
  );

export interface HttpAppOptions {
  readonly coordinator: Coordinator;
  readonly auth: AuthMode;
  /** The registry the store's latency histogram is in (timedStore), served at /metrics. */
  readonly registry?: Registry | undefined;
  /** What the dashboard needs besides its reads (log folder, RSS, host name, poll period). */
  readonly dashboard?: Omit<DashboardDeps, 'reads'> | undefined;
  /**
   * Sub-apps that authenticate their own requests (the GitHub webhook checks GitHub's signature),
   * mounted before the bearer-token checks so that those never see them.
   */
  readonly routes?: readonly Hono[] | undefined;
}

/** The API alone, for tests and for the OpenAPI document. */
export function apiApp(coordinator: Coordinator, auth: AuthMode, logDir?: string) {
  const api = newApi();
  api.use('/v1/*', authenticate(coordinator, auth));
  coreRoutes(api, { coordinator });
  logRoutes(api, { coordinator, logDir });
  moreRoutes(api, { coordinator });
  agentRoutes(api, { coordinator });
  cliRoutes(api, { coordinator });
  api.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Baton',
      version: API_VERSION,
      description:
        'Many AI coding agents and humans, one backlog, no double work. Send Authorization: Bearer <token> ' +
        '(`baton token create`); errors are {"error": {"code", "message", "hint", "details"}}.',
    },
  });
  api.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  return api;
}

/** `/healthz`: the process is alive; `/readyz`: the database answers, migrated as this process knows. */
function healthRoutes(app: Hono<AuthEnv>, coordinator: Coordinator): void {
  app.get('/healthz', (context) => context.json({ ok: true }));
  app.get('/readyz', async (context) => {
    try {
      const { applied, known } = await coordinator.schema();
      // The database's clock, one cheap read: `baton doctor --api` judges this machine's clock by it.
      const now = new Date(await coordinator.now()).toISOString();
      if (applied !== known) {
        const message = `the database is at migration ${applied}, this process knows ${known}`;
        return context.json({ ok: false, applied, known, now, message }, 503);
      }
      return context.json({ ok: true, migration: applied, now });
    } catch (error) {
      return context.json(
        { ok: false, message: error instanceof Error ? error.message : String(error) },
        503,
      );
    }
  });
}

export function httpApp(options: HttpAppOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.onError((error, context) => {
    const { status, body } = errorResponse(error);
    return context.json(body, status);
  });
  app.notFound((context) =>
    context.json(
      errorBody(
        'not_found',
        `no route ${context.req.method} ${context.req.path}`,
        'see /openapi.json for the routes',
      ),
      404,
    ),
  );
  healthRoutes(app, options.coordinator);
  // The webhook's own cap on its path alone: every other body meets BODY_MAX first, not after
  // being buffered up to 25 MiB (the webhook answers before the next layer).
  app.use('/v1/github/webhook', limitBody(WEBHOOK_BODY_MAX));
  for (const routes of options.routes ?? []) app.route('/', routes);
  // Reached when no sub-app above answered (no --github or no secret): 404, not the token check's 401
  // "a change needs a token"; on this path alone, so every other route still wants its token.
  app.post('/v1/github/webhook', noWebhook);
  app.use('*', limitBody(BODY_MAX));
  app.use('/v1/*', decodableUrl);
  app.route('/', dashboardAssets());
  app.route('/', loginRoutes(options.coordinator));
  if (options.auth === 'required') {
    // Past /healthz, /readyz, the sign-in page and the static files, everything needs a token
    // (the bearer header or the sign-in cookie), the dashboard and /metrics included; a page
    // asked for without one is sent to /login.
    app.use('*', pageGate(options.coordinator));
  } else {
    // Reads are open, but a page shows who is signed in by cookie; a stale cookie is ignored.
    app.use('*', pageReader(options.coordinator));
  }
  app.route('/', apiApp(options.coordinator, options.auth, options.dashboard?.logDir));
  app.route('/metrics', metricsRoutes({ reads: options.coordinator.views, registry: options.registry }));
  const signedIn = (context: Context): SignedIn | null => {
    const token = (context as Context<AuthEnv>).get('token') ?? null;
    if (token === null) return null;
    // A dashboard sign-in is shown as the token signed in with, whose id its reader knows.
    return token.loginOf === null
      ? { id: token.id, scope: token.scope, name: token.name }
      : { id: token.loginOf, scope: token.scope, name: null };
  };
  const mayRead = (context: Context, job: Job, current: boolean): boolean =>
    mayReadOutput((context as Context<AuthEnv>).get('token') ?? null, job, current);
  // Asked again as a long stream goes on (the change stream): the token this request came with.
  const tokenOpen = (context: Context): Promise<boolean> =>
    (context as Context<AuthEnv>).get('token') == null
      ? Promise.resolve(true)
      : identify(context as Context<AuthEnv>, options.coordinator, 'required').then(
          () => true,
          (error: unknown) => {
            if (error instanceof AuthError) return false; // refused: revoked, expired, its run ended
            throw error; // unanswered (the database away): asked again later
          },
        );
  const dashboard = {
    ...options.dashboard,
    reads: options.coordinator.views,
    signedIn,
    mayReadOutput: mayRead,
    tokenOpen,
  };
  app.route('/', dashboardRoutes(dashboard));
  return app;
}
