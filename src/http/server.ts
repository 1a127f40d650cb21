/**
 * Serves the HTTP surface (app.ts) for `baton serve` and `baton up`. Binds 127.0.0.1:7070 by
 * default; a bind that is not loopback is refused unless every request needs a token
 * (`--auth required`). When the default port is taken, the next free one is taken instead and said
 * so; a port the user named that is taken is refused (ConflictError, exit 3), and nothing is served.
 */
import type { Hono } from 'hono';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Registry } from 'prom-client';
import { Coordinator } from '../coordinator/coordinator.js';
import type { Store } from '../store/store.js';
import { timedStore } from '../store/timed.js';
import type { DashboardDeps } from '../dashboard/deps.js';
import type { AuthMode } from './auth.js';
import { bindError, checkBind, type Bind, type HttpServer } from './bind.js';
import { httpApp } from './app.js';
import { fastClaims, type Listener } from './fast-claims.js';
import { shortWayCounter, storeLatencyObserver } from './metrics.js';

/** How many ports past the asked one are tried when it is taken. */
const PORT_TRIES = 20;

/**
 * How long an idle keep-alive connection is kept open. Node's default, 5 s, equals the idle
 * timeout of Node's own client agent and undici's, so a client could reuse a connection just as
 * the server closed it and get ECONNRESET for a request the server never read. Above the idle
 * timeouts clients keep (Node 4–5 s, undici 4 s, browsers and load balancers up to 60 s), the
 * client is always the side that closes an idle connection, which it cannot race with itself.
 * Each idle connection costs a file descriptor and a few kB for that long.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** Above keepAliveTimeout, so that a connection's wait for its next request's headers outlasts it. */
const HEADERS_TIMEOUT_MS = 66_000;

export interface ServeOptions {
  readonly bind: Bind;
  readonly auth: AuthMode;
  readonly dashboard?: Omit<DashboardDeps, 'reads'> | undefined;
  /** Sub-apps that authenticate their own requests (the GitHub webhook, by signature). */
  readonly routes?: readonly Hono[] | undefined;
}

/** A store whose every call is timed into the registry's histogram, and that registry, which /metrics serves. */
export interface MeteredStore {
  readonly store: Store;
  readonly registry: Registry;
}

/**
 * Wraps the store once to time its calls (store/timed.ts) into a new registry. The process gives
 * every user of the store the wrapped one (in `baton up`: the server, the runner, the dispatcher
 * and the leader's duties), so /metrics counts each store call of the process, and counts it once.
 */
export function meterStore(store: Store): MeteredStore {
  const registry = new Registry();
  return { store: timedStore(store, storeLatencyObserver(registry)), registry };
}

/** Serves the API, /metrics and the dashboard on the metered store (meterStore). */
export async function serveHttp(metered: MeteredStore, options: ServeOptions): Promise<HttpServer> {
  checkBind(options.bind, options.auth);
  const { registry } = metered;
  const coordinator = new Coordinator(metered.store);
  const app = httpApp({
    coordinator,
    auth: options.auth,
    registry,
    dashboard: options.dashboard,
    routes: options.routes,
  });
  const listener = getRequestListener(app.fetch);
  const hono: Listener = (req, res) => void listener(req, res);
  const server = createServer(fastClaims(coordinator, hono, shortWayCounter(registry)));
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  let port = options.bind.port;
  for (let tries = 0; ; tries++) {
    try {
      await listen(server, options.bind.host, port);
      break;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const moveOn = options.bind.nextIfTaken === true && options.bind.port !== 0 && tries < PORT_TRIES;
      if (code !== 'EADDRINUSE' || !moveOn) throw bindError(options.bind, port, error);
      port++;
    }
  }
  const actual = (server.address() as AddressInfo).port;
  const host = options.bind.host.includes(':') ? `[${options.bind.host}]` : options.bind.host;
  return {
    url: `http://${host}:${actual}`,
    taken: actual !== options.bind.port && options.bind.port !== 0 ? options.bind.port : null,
    // Stopped (`baton serve` and `baton up` on SIGTERM or Ctrl-C): once no request is left, the
    // summaries of the auth:refused rows not written this minute, which a SIGKILL loses.
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await coordinator.tokens.flushRefusals();
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error): void => {
      server.removeListener('listening', done);
      reject(error);
    };
    const done = (): void => {
      server.removeListener('error', failed);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', done);
    server.listen(port, host);
  });
}
