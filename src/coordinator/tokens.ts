/**
 * API tokens for the adapters: `baton token create | list | revoke`, and for the HTTP adapter the
 * check of a presented secret and the ledger row of a refusal. Raw input is checked here, as in
 * inputs.ts, before anything reaches the store.
 */
import { NotFoundError } from '../core/errors.js';
import { checkBindings, SCOPES, type Token, type TokenCheck } from '../core/token.js';
import {
  validateDuration,
  validateId,
  validateName,
  validateOneOf,
  validateTokenId,
} from '../core/validate.js';
import type { AuthRefusal, TokenCreated, TokenCreateParams } from '../store/token-store.js';
import type { Store } from '../store/store.js';
import { actingAs, actingAsNoToken, asAnyone } from '../store/actor.js';
import type { Actor } from '../core/task.js';
import { verifiedTokens } from './token-cache.js';
import { RefusalCap, type CapSummary } from './refusal-cap.js';

/** A token lives at least a minute and at most ten years; left out, until revoked. */
const TOKEN_TTL_MIN_MS = 60_000;
const TOKEN_TTL_MAX_MS = 3650 * 86_400_000;
/**
 * The auth:refused rows this process writes (refusal-cap.ts): of revoked or expired tokens
 * presented again, 60 a minute in all; of requests beyond a live token's scope, 120 a minute and
 * each token's first in a minute always (live tokens are few, made by operators and runners, and
 * each refusal says what was tried; every mutating route tried by two tokens is 76).
 */
const processRefusals: RefusalCaps = {
  dead: new RefusalCap(60, 60_000),
  forbidden: new RefusalCap(120, 60_000, true),
};
/** How long a dashboard sign-in lasts at most: a working day, then sign in again. */
const SIGN_IN_TTL_MS = 12 * 3_600_000;
/** A secret is `baton_` and 43 base64url characters; anything much longer is not one. */
const SECRET_LENGTH_MAX = 200;

/** This process's caps on `auth:refused` rows: dead tokens presented again (401), requests beyond a scope (403). */
export interface RefusalCaps {
  readonly dead: RefusalCap;
  readonly forbidden: RefusalCap;
}

/** A refusal of a token: of its id, always. */
type TokenRefusal = AuthRefusal & { readonly token: string };

/** The words of one kind of refusal's summary rows. */
interface RefusalKind {
  readonly route: string;
  readonly target: string;
  readonly repeated: string;
  readonly dropped: string;
  readonly cap: (caps: RefusalCaps) => number;
}

const DEAD: RefusalKind = {
  route: 'requests with revoked or expired tokens',
  target: 'anything: the tokens open nothing',
  repeated: 'more uses of this revoked or expired token (a row at most once a minute per token)',
  dropped: 'more uses of revoked or expired tokens',
  cap: (caps) => caps.dead.limit,
};

const BEYOND: RefusalKind = {
  route: "requests beyond a token's scope",
  target: "what the token's rows of the same minute name",
  repeated:
    'more refusals of requests this token was refused within the minute (a row a minute per token and request)',
  dropped: "more refusals beyond a token's scope",
  cap: (caps) => caps.forbidden.limit,
};

/** The tokens of uses not written, most first, at most ten named: `0123456789ab ×40, … and 3 more`. */
function tokenCounts(counts: ReadonlyMap<string, number>): string {
  const sorted = [...counts].sort((one, other) => other[1] - one[1]);
  const named = sorted.slice(0, 10).map(([token, count]) => `${token} ×${count}`);
  return sorted.length > 10 ? `${named.join(', ')} and ${sorted.length - 10} more` : named.join(', ');
}

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

/**
 * A create checked as on the database, bindings included, in the CLI's words (--session): `baton
 * token create` over the API asks this before its request, the server naming its body's fields.
 */
export function checkTokenCreate(input: TokenCreateInput): TokenCreateParams {
  const params = parseTokenCreate(input);
  checkBindings(params.scope, { session: params.session !== null, host: params.host !== null });
  return params;
}

export class Tokens {
  constructor(
    private readonly store: Store,
    private readonly caps: RefusalCaps = processRefusals,
  ) {}

  /** Makes a token; its secret is in the answer and nowhere else. */
  create(input: TokenCreateInput): Promise<TokenCreated> {
    return this.store.tokens.create(parseTokenCreate(input));
  }

  /**
   * A dashboard sign-in's token (http/login.ts) for a token just verified: its scope and bindings,
   * lasting SIGN_IN_TTL_MS or until the token presented ends, whichever is sooner, and no longer
   * than that token is unrevoked. Its secret is the cookie's; the presented one never is.
   */
  signIn(presented: Token): Promise<TokenCreated> {
    return this.store.tokens.create({
      scope: presented.scope,
      session: presented.session,
      host: presented.host,
      name: 'dashboard sign-in',
      ttlMs: SIGN_IN_TTL_MS,
      loginOf: presented.id,
      actor: `token ${presented.id}`,
    });
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
   * that whoever holds revoked secrets cannot grow the ledger at the rate of their requests; past the
   * 60, a token a person revoked still has its first of the minute written (only persons make those). A row
   * that cannot be written (the database busy, a role without the right) is one line on stderr:
   * the request is still refused 401, and the token's next use is written if it can be.
   */
  private async usedAfterItsEnd(
    check: { id: string; reason: 'revoked' | 'expired'; byPerson?: true },
    route: string,
  ) {
    // A token a person revoked: its first refusal of the minute is written past the limit too.
    const summary = (window: CapSummary) => this.summaryRows(DEAD, window);
    if (!this.caps.dead.admit(check.id, check.id, summary, check.byPerson === true)) return;
    await this.written(this.caps.dead, check.id, {
      token: check.id,
      route,
      target: 'anything: the token opens nothing',
      reason: `the token is ${check.reason}; presented again (written at most once a minute per token)`,
    });
  }

  /**
   * Writes `auth:refused` for a request beyond its token's scope (403), under the same kind of cap
   * as a dead token's: one row a minute per token and request, at most 60 a minute in this process
   * but each token's first in a minute always, the rest summed up (refusal-cap.ts). A row that
   * cannot be written is one line on stderr; the request is refused 403 all the same.
   */
  async refused(refusal: TokenRefusal): Promise<void> {
    const key = `${refusal.token}\u0000${refusal.route}\u0000${refusal.target}`;
    if (!this.caps.forbidden.admit(refusal.token, key, (summary) => this.summaryRows(BEYOND, summary)))
      return;
    await this.written(this.caps.forbidden, key, refusal);
  }

  /** Writes the summaries of the refusals not yet summed up; `baton up` and `baton serve` call it on stopping. */
  async flushRefusals(): Promise<void> {
    await Promise.all([this.caps.dead.flush(), this.caps.forbidden.flush()]);
  }

  /** Writes one refusal's row acting as its token; a failure is a line on stderr, and the key is let go. */
  private async written(cap: RefusalCap, key: string, refusal: TokenRefusal): Promise<void> {
    try {
      await actingAs(refusal.token, () => this.write(refusal));
    } catch (error) {
      cap.failed(refusal.token, key);
      process.stderr.write(`baton: auth:refused for token ${refusal.token} not written: ${String(error)}\n`);
    }
  }

  /** The rows of what a window did not write: one per token for its repeats, one (`*`) past the limit. */
  private async summaryRows(kind: RefusalKind, summary: CapSummary): Promise<void> {
    const between = `between ${new Date(summary.from).toISOString()} and ${new Date(summary.to).toISOString()}`;
    for (const [token, count] of summary.repeated) {
      await actingAs(token, () =>
        this.write({
          token,
          route: kind.route,
          target: kind.target,
          reason: `${count} ${kind.repeated} ${between} not written`,
        }),
      );
    }
    const count = [...summary.dropped.values()].reduce((sum, uses) => sum + uses, 0);
    if (count === 0) return;
    const reason =
      `${count} ${kind.dropped} ${between} not written (at most ${kind.cap(this.caps)} rows a minute in one ` +
      `process${kind === BEYOND ? ", each token's first written" : ''}); tokens: ${tokenCounts(summary.dropped)}`;
    await actingAsNoToken(() => this.write({ token: '*', route: kind.route, target: kind.target, reason }));
  }

  private write(refusal: AuthRefusal): Promise<void> {
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
