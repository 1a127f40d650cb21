/**
 * A test server for the operator's surface: the dashboard (and /metrics) sub-apps mounted as the
 * HTTP API will mount them, on a real store, served by @hono/node-server on a free port.
 *
 * The API's own routes (force-release, host enable/disable, tokens) are another module's; until
 * they are wired, this server stands in for the two the dashboard's buttons call, behind a fixed
 * operator token: force-release calls the coordinator's forceRelease (which fences every later
 * write of the holder) and the host toggle calls the coordinator's setHostEnabled.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { dashboardRoutes } from '../../src/dashboard/routes.js';
import type { DashboardDeps } from '../../src/dashboard/deps.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';

export const OPERATOR_TOKEN = 'test-operator-token';

export interface TestServer {
  readonly url: string;
  readonly db: string;
  readonly store: Store;
  readonly coordinator: Coordinator;
  /** Requests the stand-in API routes accepted: [route, bearer token, body]. */
  readonly actions: [string, string, unknown][];
  close(): Promise<void>;
}

export async function startTestServer(
  db: string,
  extra: (app: Hono, store: Store) => void = () => {},
  deps: Partial<DashboardDeps> = {},
): Promise<TestServer> {
  const store = await openStore(db);
  const coordinator = new Coordinator(store);
  const actions: [string, string, unknown][] = [];
  const app = new Hono();
  const bearer = (header: string | undefined): string => header?.replace(/^Bearer /, '') ?? '';
  app.post('/v1/claims/:key/force-release', async (c) => {
    const token = bearer(c.req.header('authorization'));
    if (token !== OPERATOR_TOKEN)
      return c.json({ error: { code: 'unauthorized', message: 'no token' } }, 401);
    const body = await c.req.json<{ reason?: unknown }>();
    const key = c.req.param('key');
    const r = await coordinator.forceRelease({ key, reason: body.reason, by: { name: 'operator token' } });
    if (!r.ok) return c.json({ error: { code: 'not_found', message: 'no live claim' } }, 404);
    actions.push([`force-release ${key}`, token, body]);
    return c.json({ fenced: { session: r.holder.session, epoch: r.holder.epoch } });
  });
  app.post('/v1/hosts/:name/:action{enable|disable}', async (c) => {
    const token = bearer(c.req.header('authorization'));
    if (token !== OPERATOR_TOKEN)
      return c.json({ error: { code: 'unauthorized', message: 'no token' } }, 401);
    const host = await coordinator.cluster.setHostEnabled(
      c.req.param('name'),
      c.req.param('action') === 'enable',
    );
    actions.push([`${c.req.param('action')} ${host.name}`, token, null]);
    return c.json(host);
  });
  extra(app, store);
  app.route('/', dashboardRoutes({ reads: coordinator.views, pollMs: 100, ...deps }));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    db,
    store,
    coordinator,
    actions,
    close: async () => {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
    },
  };
}

export const freshSqlite = (): string => join(mkdtempSync(join(tmpdir(), 'baton-dash-')), 'baton.db');
