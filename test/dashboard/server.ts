/**
 * A test server for the operator's surface: the HTTP app `baton serve` runs (the API, /metrics and
 * the dashboard, src/http/app.ts) on a real store, served by @hono/node-server on a free port,
 * with an operator token made in the store for the dashboard's buttons.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { httpApp } from '../../src/http/app.js';
import type { AuthEnv, AuthMode } from '../../src/http/auth.js';
import type { DashboardDeps } from '../../src/dashboard/deps.js';
import { openStore } from '../../src/store/open.js';
import type { OpenOptions } from '../../src/store/test-switches.js';
import type { Store } from '../../src/store/store.js';

export interface TestServer {
  readonly url: string;
  readonly db: string;
  readonly store: Store;
  readonly coordinator: Coordinator;
  /** An operator token's secret, for the dashboard's buttons, and its id (in the ledger). */
  readonly operatorToken: string;
  readonly operatorTokenId: string;
  close(): Promise<void>;
}

export async function startTestServer(
  db: string,
  extra: (app: Hono<AuthEnv>, store: Store) => void = () => {},
  deps: Partial<DashboardDeps> = {},
  auth: AuthMode = 'reads-open',
  open: OpenOptions = {},
): Promise<TestServer> {
  const store = await openStore(db, open);
  const coordinator = new Coordinator(store);
  // The real API beside the dashboard, as `baton serve` mounts them, with an operator token.
  const operator = await store.tokens.create({ scope: 'operator', name: 'dashboard test' });
  const app = httpApp({ coordinator, auth, dashboard: { pollMs: 100, ...deps } });
  extra(app, store);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    db,
    store,
    coordinator,
    operatorToken: operator.secret,
    operatorTokenId: operator.token.id,
    close: async () => {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
    },
  };
}

export const freshSqlite = (): string => join(mkdtempSync(join(tmpdir(), 'baton-dash-')), 'baton.db');
