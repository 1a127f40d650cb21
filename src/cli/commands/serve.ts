/**
 * `baton serve`: the HTTP API, the dashboard and /metrics on the database, without a runner or a
 * bid for the dispatcher's lease. `baton up` serves the same unless given --no-http.
 */
import type { Command } from 'commander';
import { validateOneOf } from '../../core/validate.js';
import type { AuthMode } from '../../http/auth.js';
import { HTTP_DEFAULT, parseBind, serveHttp, servingLine, type Bind } from '../../http/server.js';
import { withStore } from '../run.js';

export interface HttpFlags {
  /** host:port; false with --no-http. */
  readonly http?: string | boolean;
  readonly auth?: string;
}

/** Where to serve (null: not at all) and whether reads need a token. */
export function parseHttpFlags(o: HttpFlags): { bind: Bind | null; auth: AuthMode } {
  const auth: AuthMode =
    o.auth === undefined ? 'reads-open' : validateOneOf('--auth', o.auth, ['required'] as const);
  if (o.http === false) return { bind: null, auth };
  return { bind: parseBind(typeof o.http === 'string' ? o.http : HTTP_DEFAULT), auth };
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the HTTP API, the dashboard and /metrics (no runner, no dispatcher)')
    .option('--http <host:port>', `where to listen (default ${HTTP_DEFAULT}; the next free port if taken)`)
    .option('--auth <mode>', '`required`: reads need a token too (needed to bind beyond loopback)')
    .action((o: HttpFlags, cmd: Command) => {
      const { bind, auth } = parseHttpFlags(o);
      return withStore(cmd, async (store) => {
        const server = await serveHttp(store, { bind: bind ?? parseBind(HTTP_DEFAULT), auth });
        process.stdout.write(`${servingLine(server)}\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await server.close();
      });
    });
}
