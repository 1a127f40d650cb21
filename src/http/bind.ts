/**
 * Where `baton serve` and `baton up` listen, and the line they print once they do: what the CLI
 * needs before it decides to serve. The server itself (server.ts) loads hono, zod and prom-client,
 * about 0.6 s of CPU that every other command would pay at start, so the CLI imports it only when
 * it serves (commands/serve.ts, serveHttpLazily).
 */
import { InvalidInputError } from '../core/errors.js';
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
