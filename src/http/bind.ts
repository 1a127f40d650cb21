/**
 * Where `baton serve` and `baton up` listen, and the line they print once they do: what the CLI
 * needs before it decides to serve. The server itself (server.ts) loads hono, zod and prom-client,
 * about 0.6 s of CPU that every other command would pay at start, so the CLI imports it only when
 * it serves (commands/serve.ts, serveHttpLazily).
 */
import { createServer } from 'node:net';
import { ConflictError, InvalidInputError, type BatonError } from '../core/errors.js';
import type { AuthMode } from './auth.js';

export const HTTP_DEFAULT = '127.0.0.1:7070';

export interface Bind {
  readonly host: string;
  readonly port: number;
  /**
   * Whether a taken port moves the server to the next free one: only for the default, which no
   * one named. A port the user named that is taken is refused (exit 3), so that a scraper or a
   * BATON_URL set for it never reaches another process.
   */
  readonly nextIfTaken?: boolean;
}

/**
 * `host:port`, `:port` or `[::1]:port`; the host defaults to 127.0.0.1. `nextIfTaken`: the
 * default's rule (Bind.nextIfTaken).
 */
export function parseBind(text: string, nextIfTaken = false): Bind {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (match === null || !Number.isInteger(port) || port > 65535) {
    throw new InvalidInputError(
      `--http must be host:port, got ${JSON.stringify(text)}`,
      'write it as 127.0.0.1:7070, or :0 for any free port',
    );
  }
  const host = match[1] ?? (match[2] === undefined || match[2] === '' ? '127.0.0.1' : match[2]);
  return { host, port, nextIfTaken };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/**
 * Refuses a bind others can reach unless every request needs a token. The CLI checks it before it
 * opens the store (a refused `baton up` makes no database file), the server again for library callers.
 */
export function checkBind(bind: Bind, auth: AuthMode): void {
  if (!isLoopback(bind.host) && auth !== 'required') {
    throw new InvalidInputError(
      `refusing to serve on ${bind.host}, which is not loopback, with reads open to anyone`,
      'add --auth required (every request then needs a token), or bind 127.0.0.1',
    );
  }
}

export interface HttpServer {
  readonly url: string;
  /** The port asked for, when it was taken and another was used. */
  readonly taken: number | null;
  close(): Promise<void>;
}

/** The one line a server prints when it starts: its URL, and which port it took instead. */
export function servingLine(server: HttpServer): string {
  const instead = server.taken === null ? '' : ` (port ${server.taken} is taken; took the next free one)`;
  return `serving the API and dashboard on ${server.url}${instead}`;
}

/** Why a bind failed: a port the user named that is taken is a conflict (exit 3), the rest bad input. */
export function bindError(bind: Bind, port: number, error: unknown): BatonError {
  const code = (error as { code?: unknown }).code;
  if (code === 'EADDRINUSE' && bind.nextIfTaken !== true) {
    return new ConflictError(
      `cannot serve HTTP on ${bind.host}:${bind.port}: another process listens on port ${bind.port}`,
      `see which with \`ss -ltnp 'sport = :${bind.port}'\`; stop it, or name a free port with --http host:port`,
    );
  }
  const why = code === 'EADDRINUSE' ? `ports ${bind.port} to ${port} are taken` : (error as Error).message;
  return new InvalidInputError(
    `cannot serve HTTP on ${bind.host}: ${why}`,
    'pick another with --http host:port',
  );
}

/**
 * Refuses, before anything else happens, a port the user named that another process holds: `baton
 * up` opens (and on a new path creates) its database before it serves, so without this a refused
 * `up` left a new `.baton/baton.db` behind. It listens on the port and closes at once; the server's
 * own bind still refuses if another process takes the port in between. The default bind and `:0`
 * (which move on or take any port) pass.
 */
export async function checkPortFree(bind: Bind): Promise<void> {
  if (bind.nextIfTaken === true || bind.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error) => reject(bindError(bind, bind.port, error)));
    probe.listen(bind.port, bind.host, () => probe.close(() => resolve()));
  });
}
