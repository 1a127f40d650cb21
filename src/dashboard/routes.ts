/**
 * The dashboard: server-rendered pages, each with a live region that htmx reloads when the
 * server's change stream (server-sent events) says the database moved. Mounted at `/` by the
 * HTTP adapter; reads come through `deps.reads` (the coordinator's views), and the buttons
 * post to the API's routes with the operator's token, so the dashboard itself changes nothing.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Hono, type Context } from 'hono';
import { html } from 'hono/html';
import { streamSSE } from 'hono/streaming';
import { BatonError } from '../core/errors.js';
import { APP_CSS, APP_JS } from './assets.js';
import type { DashboardDeps, Query } from './deps.js';
import { ChangeFeed } from './feed.js';
import { refuseOddNumbers } from './plain-numbers.js';
import { VIEWS, page, type Html, type ViewName } from './layout.js';
import { auditView } from './views/audit.js';
import { claimsView } from './views/claims.js';
import { hostsView, leaderView } from './views/cluster.js';
import { inboxView } from './views/inbox.js';
import { jobOutput, jobView, OUTPUT_HIDDEN, outputView, type Output } from './views/job.js';
import type { Job } from '../core/job.js';
import { queueView } from './views/queue.js';
import { sessionsView } from './views/sessions.js';
import { taskView } from './views/task.js';
import { tasksView } from './views/tasks.js';
import { workspacesView } from './views/workspaces.js';

const HTMX_PATH = createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js');

/** The job's latest output as its page shows it: the file here, else the stream (views/job.ts). */
const outputOf = (deps: DashboardDeps, job: Job): Promise<Output> =>
  jobOutput(job, deps.logDir, (id, attempt, max) => deps.reads.streamTail(id, attempt, max));

type Fragment = (query: Query, param: string, context: Context) => Promise<Html>;
type Fragments = Record<ViewName, Fragment>;

function fragments(deps: DashboardDeps): Fragments {
  const { reads } = deps;
  const apiBase = deps.apiBase ?? '';
  const rss = (pid: number, host: string | null): string => {
    const here = deps.hostName === undefined || host === deps.hostName;
    const mb = here ? (deps.rssMb?.(pid) ?? null) : null;
    return mb === null ? `not measurable from here (pid ${pid} on ${host ?? '?'})` : `${mb} MB`;
  };
  return {
    queue: async (query) => queueView(await reads.queue(query), query),
    tasks: async (query) => tasksView(await reads.tasks(query), query),
    task: async (_query, key) => taskView(await reads.task(key), apiBase),
    claims: async () => claimsView((await reads.claims()).claims, { apiBase, rss }),
    leader: async () => leaderView(await reads.leader()),
    hosts: async () => hostsView(await reads.hosts(), apiBase),
    workspaces: async () => workspacesView(await reads.workspaces()),
    inbox: async () => inboxView(await reads.inbox(), apiBase),
    sessions: async (query) => sessionsView(await reads.sessions(query), query),
    audit: async (query) => auditView(await reads.audit(query), query),
    job: async (_query, id, context) => {
      const { job, history, dependencies } = await reads.job(id);
      const earlier = deps.mayReadOutput?.(context, job, false) === false ? OUTPUT_HIDDEN : undefined;
      if (deps.mayReadOutput?.(context, job, true) === false) {
        const hidden = { output: OUTPUT_HIDDEN, logDir: undefined, earlier: OUTPUT_HIDDEN };
        return jobView({ ...job, outputTail: null }, history, dependencies, hidden);
      }
      return jobView(job, history, dependencies, {
        output: await outputOf(deps, job),
        logDir: deps.logDir,
        earlier,
      });
    },
  };
}

/** A refused read (bad filter, unknown job, store down) as one line; anything else is a bug. */
function refusal(error: unknown): { status: 400 | 404 | 503; body: Html } {
  if (!(error instanceof BatonError)) throw error;
  const status = error.code === 'not_found' ? 404 : error.code === 'store_unavailable' ? 503 : 400;
  const body = html`<p class="late" role="alert">
    ${error.code}: ${error.message}${error.hint === undefined ? '' : ` (${error.hint})`}
  </p>`;
  return { status, body };
}

const queryOf = (context: Context): Query => context.req.query();

export function dashboardRoutes(deps: DashboardDeps): Hono {
  const app = new Hono();
  const views = fragments(deps);
  pageRoutes(app, deps, views);
  fragmentRoutes(app, deps, views);
  app.get(
    '/ui/events',
    changeStream(new ChangeFeed(() => deps.reads.changeMark(), deps.pollMs ?? 500), deps),
  );
  return app;
}

/** Each view as a whole page, whose live region reloads from its fragment's address. */
function pageRoutes(app: Hono, deps: DashboardDeps, views: Fragments): void {
  const fragmentUrl = (context: Context, name: string, param: string): string => {
    const search = new URL(context.req.url).search;
    return `/ui/frag/${name}${param === '' ? '' : `/${encodeURIComponent(param)}`}${search}`;
  };
  const full = (name: ViewName, title: (param: string) => string) => async (context: Context) => {
    const param = context.req.param('id') ?? '';
    // Read before the view: a change after it is newer than what the page shows (changeStream).
    const since = await deps.reads.changeMark().catch(() => undefined);
    const shell = (body: Html) =>
      page({
        view: name,
        title: title(param),
        fragment: fragmentUrl(context, name, param),
        body,
        signedIn: deps.signedIn?.(context) ?? null,
        since,
      });
    try {
      refuseOddNumbers(name, queryOf(context), param);
      return context.html(shell(await views[name](queryOf(context), param, context)));
    } catch (error) {
      const { status, body } = refusal(error);
      return context.html(
        shell(
          html`${body}
            <p><a href="/">Back to the queue</a></p>`,
        ),
        status,
      );
    }
  };
  for (const view of VIEWS)
    app.get(
      view.path,
      full(view.name, () => view.title),
    );
  app.get(
    '/jobs/:id',
    full('job', (id) => `Job ${id}`),
  );
  app.get(
    '/tasks/:id',
    full('task', (key) => `Task ${key}`),
  );
}

/** The live regions alone, as htmx reloads them (and a job's output, which follows its log). */
function fragmentRoutes(app: Hono, deps: DashboardDeps, views: Fragments): void {
  app.get('/ui/frag/:view/:id?', async (context) => {
    const name = context.req.param('view');
    const param = context.req.param('id') ?? '';
    try {
      refuseOddNumbers(name, queryOf(context), param);
      if (name === 'output') {
        const { job } = await deps.reads.job(param);
        const mayRead = deps.mayReadOutput?.(context, job, true) !== false;
        return context.html(outputView(job, mayRead ? await outputOf(deps, job) : OUTPUT_HIDDEN));
      }
      // Own views only: a name such as `__proto__` or `toString` is no view, not Object's own.
      const view = Object.hasOwn(views, name) ? views[name as ViewName] : undefined;
      if (view === undefined) return context.html(html`<p role="alert">no view ${name}</p>`, 404);
      return context.html(await view(queryOf(context), param, context));
    } catch (error) {
      const { status, body } = refusal(error);
      return context.html(body, status);
    }
  });
}

/**
 * The change stream as server-sent events: `change` with the database's mark each time it moves,
 * coalescing marks that arrive while one is being sent.
 */
function changeStream(feed: ChangeFeed, deps: Pick<DashboardDeps, 'tokenOpen' | 'tokenRecheckMs'>) {
  return (context: Context) =>
    streamSSE(context, async (stream) => {
      const queue: number[] = [];
      let wake: (() => void) | null = null;
      // Its token asked again every few seconds: a revoked or expired one's stream ends (the
      // token cache, coordinator/token-cache.ts, forgets a revoked token at once in this process
      // and within 2 s in another). An unanswered check ends nothing: the next one asks again.
      let closed = false;
      const recheck = setInterval(() => {
        void deps.tokenOpen?.(context).then(
          (open) => {
            closed ||= !open;
            if (closed) wake?.();
          },
          () => {},
        );
      }, deps.tokenRecheckMs ?? 5_000);
      // The page's mark, read as it was rendered (?since=): a change after it reloads the view.
      const since = Number(context.req.query('since') ?? Number.NaN);
      const stop = feed.listen(
        (mark) => {
          queue.push(mark);
          wake?.();
        },
        Number.isSafeInteger(since) && since >= 0 ? since : undefined,
      );
      stream.onAbort(() => {
        stop();
        wake?.();
      });
      await stream.writeSSE({ event: 'hello', data: 'listening' });
      while (!stream.aborted && !closed) {
        const mark = queue.shift();
        if (mark === undefined) {
          // Waits for a change, or 15 s: a comment line keeps idle proxies from closing the stream.
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 15_000).unref();
          });
          wake = null;
          if (queue.length === 0 && !stream.aborted && !closed) await stream.write(': idle\n\n');
          continue;
        }
        queue.length = 0;
        await stream.writeSSE({ event: 'change', data: String(mark) });
      }
      clearInterval(recheck);
      stop();
      if (closed) await stream.writeSSE({ event: 'ended', data: 'the token no longer opens: sign in again' });
    });
}

/**
 * The dashboard's script, style and htmx: public, like any site's static files (they hold no
 * data), so the sign-in page can be styled before anyone has signed in.
 */
export function dashboardAssets(): Hono {
  const app = new Hono();
  const htmx = readFileSync(HTMX_PATH);
  const asset = (type: string, body: string | Buffer) => (context: Context) =>
    context.body(typeof body === 'string' ? body : new Uint8Array(body), 200, {
      'content-type': type,
      'cache-control': 'no-cache',
    });
  app.get('/ui/htmx.js', asset('text/javascript; charset=utf-8', htmx));
  app.get('/ui/app.js', asset('text/javascript; charset=utf-8', APP_JS));
  app.get('/ui/app.css', asset('text/css; charset=utf-8', APP_CSS));
  return app;
}
