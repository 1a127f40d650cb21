/**
 * API tokens for the adapters: `baton token create | list | revoke`, and for the HTTP adapter the
 * check of a presented secret and the ledger row of a refusal. Raw input is checked here, as in
 * inputs.ts, before anything reaches the store.
 */
import { NotFoundError } from '../core/errors.js';
import { SCOPES, type Token, type TokenCheck } from '../core/token.js';
import {
  validateDuration,
  validateId,
  validateName,
  validateOneOf,
  validateTokenId,
} from '../core/validate.js';
import type { AuthRefusal, TokenCreated, TokenCreateParams } from '../store/token-store.js';
import type { Store } from '../store/store.js';
import { actingAs, asAnyone } from '../store/actor.js';
import type { Actor } from '../core/task.js';
import { verifiedTokens } from './token-cache.js';
import { RefusalCap } from './refusal-cap.js';

/** A token lives at least a minute and at most ten years; left out, until revoked. */
const TOKEN_TTL_MIN_MS = 60_000;
const TOKEN_TTL_MAX_MS = 3650 * 86_400_000;
/** A revoked or expired token presented again: the rows this process writes of it (refusal-cap.ts). */
const processRefusals = new RefusalCap();
/** A secret is `baton_` and 43 base64url characters; anything much longer is not one. */
const SECRET_LENGTH_MAX = 200;

export interface TokenCreateInput {
  readonly scope: unknown;
  readonly session?: unknown;
  readonly host?: unknown;
  readonly name?: unknown;
  /** A duration (`30d`, `12h`). */
  readonly expires?: unknown;
  /** Who asked, named by the adapter (issue 14, item 11): the ledger row's `by`. */
  readonly by?: Actor | undefined;
}

const given = (value: unknown): boolean => value !== undefined && value !== null;

function parseTokenCreate(input: TokenCreateInput): TokenCreateParams {
  return {
    scope: validateOneOf('scope', input.scope, SCOPES),
    session: given(input.session) ? validateId('session', input.session) : null,
    host: given(input.host) ? validateName('host', input.host) : null,
    name: given(input.name) ? validateName('token name', input.name) : null,
    ttlMs: given(input.expires)
      ? validateDuration('expires', input.expires, TOKEN_TTL_MIN_MS, TOKEN_TTL_MAX_MS)
      : null,
    actor: input.by?.name,
  };
}

export class Tokens {
  constructor(
    private readonly store: Store,
    private readonly refusals: RefusalCap = processRefusals,
  ) {}

  /** Makes a token; its secret is in the answer and nowhere else. */
  create(input: TokenCreateInput): Promise<TokenCreated> {
    return this.store.tokens.create(parseTokenCreate(input));
  }

  /** The tokens that may still open the API; `all`: revoked and expired ones too. */
  list(params?: { readonly all?: boolean | undefined }): Promise<readonly Token[]> {
    return this.store.tokens.list({ all: params?.all === true });
  }

  /** Revokes the token, naming who asked in the ledger; `revoked: false` when it already was. */
  async revoke(id: unknown, by?: Actor): Promise<{ readonly token: Token; readonly revoked: boolean }> {
    const checked = validateTokenId(id);
    const revoked = await this.store.tokens.revoke({ id: checked, actor: by?.name });
    verifiedTokens.forget(checked);
    const token = await this.store.tokens.get(checked);
    if (token === null) throw new NotFoundError('token', checked, 'list tokens with `baton token list`');
    return { token, revoked };
  }

  /**
   * The token a presented secret opens, or why it opens none. A token that opened within the
   * last TOKEN_CACHE_MS is answered from this process's memory (token-cache.ts). A revoked or
   * expired token presented again (a leaked one, used after its revocation) is written to the
   * ledger as `auth:refused` under its id, `route` saying what it was presented for.
   */
  async verify(secret: string, route = 'a request'): Promise<TokenCheck> {
    if (secret.length > SECRET_LENGTH_MAX) return { ok: false, reason: 'unknown' };
    const known = verifiedTokens.get(secret);
    if (known !== null) return { ok: true, token: known };
    const askedAt = verifiedTokens.clock();
    const check = await asAnyone(() => this.store.tokens.verify(secret));
    if (check.ok) verifiedTokens.put(secret, check.token, askedAt);
    else if (check.reason === 'revoked' || check.reason === 'expired')
      await this.usedAfterItsEnd(check, route);
    return check;
  }

  /**
   * At most one row a minute per token and 60 a minute in all in this process (refusal-cap.ts), so
   * that whoever holds revoked secrets cannot grow the ledger at the rate of their requests. A row
   * that cannot be written (the database busy, a role without the right) is one line on stderr:
   * the request is still refused 401, and the token's next use is written if it can be.
   */
  private async usedAfterItsEnd(check: { id: string; reason: 'revoked' | 'expired' }, route: string) {
    if (!this.refusals.admit(check.id, (dropped, from, to) => this.notWritten(dropped, from, to))) return;
    try {
      await actingAs(check.id, () =>
        this.refused({
          token: check.id,
          route,
          target: 'anything: the token opens nothing',
          reason: `the token is ${check.reason}; presented again (written at most once a minute per token)`,
        }),
      );
    } catch (error) {
      this.refusals.failed(check.id);
      process.stderr.write(`baton: auth:refused for token ${check.id} not written: ${String(error)}\n`);
    }
  }

  /** The summary row of the uses past the cap: how many, and when. */
  private notWritten(dropped: number, from: number, to: number): Promise<void> {
    const limit = this.refusals.limit;
    return asAnyone(() =>
      this.refused({
        token: '*',
        route: 'requests with revoked or expired tokens',
        target: 'anything: the tokens open nothing',
        reason:
          `${dropped} more uses of revoked or expired tokens between ${new Date(from).toISOString()} and ` +
          `${new Date(to).toISOString()} not written (at most ${limit} rows a minute in one process)`,
      }),
    );
  }

  /** Writes `auth:refused` for a request beyond its token's scope. */
  refused(refusal: AuthRefusal): Promise<void> {
    return this.store.tokens.refused({
      ...refusal,
      route: printable(refusal.route),
      target: printable(refusal.target),
      reason: printable(refusal.reason),
    });
  }
}

/** Text from a request kept for the ledger: control characters shown as `?`, at most 500 long. */
function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, '?').slice(0, 500);
}
