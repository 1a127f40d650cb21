/**
 * `baton serve`: the HTTP API, the dashboard and /metrics on the database, without a runner or a
 * bid for the dispatcher's lease. `baton up` serves the same unless given --no-http.
 */
import type { Command } from 'commander';
import { join as joinPath } from 'node:path';
import { validateOneOf } from '../../core/validate.js';
import type { AuthMode } from '../../http/auth.js';
import {
  checkBind,
  HTTP_DEFAULT,
  parseBind,
  servingLine,
  type Bind,
  type HttpServer,
} from '../../http/bind.js';
import type { MeteredStore, ServeOptions } from '../../http/server.js';
import type { Store } from '../../store/store.js';
import { collect, refuseJson, stateDir, withStore, type GlobalOptions } from '../run.js';
import { InvalidInputError } from '../../core/errors.js';
import { terminalText } from '../output.js';
import { stopOnClosedOutput } from '../stdio.js';
import { checkArgvSecrets } from '../argv-secrets.js';
import {
  backlogFrom,
  checkGithubFlags,
  checkGithubOnly,
  githubOptions,
  webhookOf,
  type GithubFlags,
} from '../github-flags.js';

export interface HttpFlags {
  /** host:port; false with --no-http. */
  readonly http?: string | boolean;
  readonly auth?: string;
}

/** Where to serve (null: not at all) and whether reads need a token. */
export function parseHttpFlags(flags: HttpFlags): { bind: Bind | null; auth: AuthMode } {
  const auth: AuthMode =
    flags.auth === undefined ? 'reads-open' : validateOneOf('--auth', flags.auth, ['required'] as const);
  if (flags.http === false) return { bind: null, auth };
  // A port the user names is that port or nothing; the default moves on to the next free one.
  return {
    bind: typeof flags.http === 'string' ? parseBind(flags.http) : parseBind(HTTP_DEFAULT, true),
    auth,
  };
}

/**
 * The store wrapped to time its calls for /metrics (meterStore), loading the server only now: it
 * brings hono, zod and prom-client, which would otherwise cost every CLI call about 0.6 s of CPU
 * at start (src/http/bind.ts). Give the wrapped store to every user of the store in the process.
 */
export async function meterStoreLazily(store: Store): Promise<MeteredStore> {
  const { meterStore } = await import('../../http/server.js');
  return meterStore(store);
}

/** Serves the HTTP surface on the metered store (meterStoreLazily). */
export async function serveHttpLazily(metered: MeteredStore, options: ServeOptions): Promise<HttpServer> {
  const { serveHttp } = await import('../../http/server.js');
  return serveHttp(metered, options);
}

interface ServeFlags extends HttpFlags, GithubFlags {
  readonly github?: string;
  readonly githubLabel?: readonly string[];
}

export function registerServe(program: Command): void {
  const serve = program
    .command('serve')
    .description('serve the HTTP API, the dashboard and /metrics (no runner, no dispatcher)')
    .option(
      '--http <host:port>',
      `where to listen (default ${HTTP_DEFAULT}, or the next free port; a named port that is taken: exit 3)`,
    )
    .option('--auth <mode>', '`required`: reads need a token too (needed to bind beyond loopback)')
    .option('--github <repo>', "accept owner/repo's GitHub webhook (needs GITHUB_WEBHOOK_SECRET)")
    .option(
      '--github-label <name>',
      'with --github: a delivery adds only issues with this label; repeatable (any of them)',
      collect,
    );
  githubOptions(serve).action((flags: ServeFlags, cmd: Command) => {
    refuseJson(
      cmd,
      'it serves until stopped and prints the address it serves on',
      'leave out --json; its HTTP API (/v1/...) answers in JSON',
    );
    const { bind, auth } = parseHttpFlags(flags);
    if (bind !== null) checkBind(bind, auth);
    checkGithubOnly(flags);
    if (flags.github !== undefined) checkWebhookFlags(flags.github, flags);
    return withStore(cmd, async (raw) => {
      checkArgvSecrets('serve', cmd.optsWithGlobals<GlobalOptions>(), false); // every flag was accepted
      const metered = await meterStoreLazily(raw);
      const { store } = metered;
      // Listened for before the first line: a reader gone during --github's lines stops it too (exit 8).
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
        stopOnClosedOutput('baton serve', 'stopping as on SIGTERM', resolve);
      });
      const log = (line: string): void => void process.stdout.write(`${terminalText(line)}\n`);
      const backlog = flags.github === undefined ? null : await backlogFrom(store, flags.github, flags, log);
      const routes = webhookOf(backlog, flags.githubLabel ?? []);
      // The runners' log folder, where a `baton up` started here keeps it: the job page shows the
      // output of every run it finds there, and says where the output is for the others.
      const dashboard = { logDir: joinPath(stateDir(cmd.optsWithGlobals<GlobalOptions>()), 'logs') };
      const server = await serveHttpLazily(metered, {
        bind: bind ?? parseBind(HTTP_DEFAULT, true),
        auth,
        routes,
        dashboard,
      });
      process.stdout.write(`${servingLine(server)}\n`);
      await stopped;
      await server.close();
    });
  });
}

/** `serve --github` is for the webhook: without its secret it would accept nothing. */
function checkWebhookFlags(repo: string, flags: ServeFlags): void {
  checkGithubFlags(repo, flags);
  if ((process.env['GITHUB_WEBHOOK_SECRET'] ?? '') === '') {
    throw new InvalidInputError(
      'GITHUB_WEBHOOK_SECRET is not set: baton serve --github accepts only signed webhook deliveries',
      'export GITHUB_WEBHOOK_SECRET=<the secret set on the GitHub webhook>',
    );
  }
}
