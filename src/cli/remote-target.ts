/**
 * Whether a command goes over Baton's HTTP API (remote.ts) or to the database: read before
 * anything else, so that a local call does not load the HTTP client (docs/decisions/0007).
 */
import { InvalidInputError } from '../core/errors.js';

export interface RemoteTarget {
  readonly url: string;
  readonly token: string;
}

/** --api/--token, else BATON_URL/BATON_TOKEN; null when --db is given or no URL is set. */
export function remoteTarget(
  options: { readonly db?: string; readonly api?: string; readonly token?: string },
  env: NodeJS.ProcessEnv,
): RemoteTarget | null {
  if (options.db !== undefined) return null;
  const url = options.api ?? (env['BATON_URL'] || undefined);
  if (url === undefined) return null;
  // An empty --token, like an empty BATON_TOKEN, is no token.
  const token = (options.token ?? env['BATON_TOKEN']) || undefined;
  if (token === undefined) {
    throw new InvalidInputError(
      `Baton's API is named (${url}) but no token`,
      'set BATON_TOKEN or pass --token (make one with `baton token create`)',
    );
  }
  if (!/^https?:\/\//.test(url)) {
    throw new InvalidInputError(
      `--api (or BATON_URL) must be an http:// or https:// URL, got ${JSON.stringify(url)}`,
    );
  }
  // What an Authorization header can carry (http/auth.ts): a token pasted with the line around it,
  // or with a newline, would otherwise come back from the server as a malformed header.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidInputError(
      `the API token (--token or BATON_TOKEN) holds spaces or control characters: it is not a token`,
      'give the token alone, as `baton token create` printed it (baton_…)',
    );
  }
  return { url, token };
}

/**
 * Over --api the token is who acts, and these routes take no session: a --session given would be
 * dropped from the ledger's row, so it is refused instead (close, approve, gate, reopen, resolve,
 * reject, depend and undepend send theirs).
 */
export function noSessionOverHttp(command: string, by: { readonly session?: number | undefined }): undefined {
  if (by.session === undefined) return undefined;
  throw new InvalidInputError(
    `baton ${command} --session is not sent over --api: the token is who acts there`,
    'leave --session out, or run it with --db against the database',
  );
}
