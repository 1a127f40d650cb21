/**
 * API tokens in storage terms (core/token.ts has the model). The store keeps only a secret's
 * sha256; the secret itself is made here once and handed back to the creator. Expiry is judged on
 * the database clock. Every change writes its ledger row in the same step.
 */
import type { SessionId } from '../core/session.js';
import type { Scope, Token, TokenCheck } from '../core/token.js';

export interface TokenCreateParams {
  readonly scope: Scope;
  /** Required for `agent` (a live session), refused for other scopes. */
  readonly session?: SessionId | null | undefined;
  /** Required for `host`, refused for other scopes. */
  readonly host?: string | null | undefined;
  readonly name?: string | null | undefined;
  /** Lifetime from now on the database clock; left out, the token lasts until revoked. */
  readonly ttlMs?: number | null | undefined;
  /** For `agent` only: the run the token is minted for; it opens nothing once that run is over. */
  readonly run?: TokenRun | null | undefined;
  /** Who asked, in words (`alice@box`, `token t1`): `by` in the `token:created` row. */
  readonly actor?: string | undefined;
  /**
   * A dashboard sign-in (http/login.ts): the id of the token presented, whose bindings the caller
   * copies. The new token never outlives it (its expiry is the sooner of the two) and opens nothing
   * once it is revoked or expired.
   */
  readonly loginOf?: string | null | undefined;
}

export interface TokenRevokeParams {
  readonly id: string;
  /**
   * Who asked, in words: `by` in the `token:revoked` row, kept on the token (`revoked_by`, migration
   * 0048). Left out only by a runner revoking its run's token at the run's end (AgentReach.close).
   */
  readonly actor?: string | undefined;
}

/**
 * The run an agent token belongs to: one attempt of a job (its id and the epoch it was placed
 * at) and the claim that attempt holds (the claim's epoch, on the job's task, by the token's
 * session). `verify` answers `ended` once the job is no longer claimed or running at that epoch,
 * the claim is released, or the session is not live within its TTL, on the database clock.
 */
export interface TokenRun {
  readonly jobId: number;
  readonly jobEpoch: number;
  readonly claimEpoch: number;
}

export interface TokenCreated {
  readonly token: Token;
  /** The secret, shown once: only its hash is stored. */
  readonly secret: string;
}

export interface AuthRefusal {
  /** The refused token's id, or null when none was presented. */
  readonly token: string | null;
  /** `METHOD /path` as requested. */
  readonly route: string;
  /** What the request tried to act on, in words (`claim github:acme/api#1 of session 7`). */
  readonly target: string;
  readonly reason: string;
  readonly key?: string | null | undefined;
  readonly jobId?: number | null | undefined;
  /** The session the token acts for (an agent token's own), not the victim's. */
  readonly session?: SessionId | null | undefined;
}

export interface TokenListParams {
  readonly all?: boolean | undefined;
}

export interface TokenStore {
  readonly tokens: {
    /**
     * Makes a token with a fresh random secret and writes `token:created`. InvalidInputError when
     * the bindings do not fit the scope; NotFoundError for an unknown session, FencedError for an
     * ended one.
     */
    create(params: TokenCreateParams): Promise<TokenCreated>;
    /**
     * The token whose secret this is, unless it is unknown, revoked, expired (database clock) or,
     * bound to a session, that session is no longer live (`ended`): an agent token dies with its
     * run's session however the run ended, even if nobody revoked it; a token minted for a run
     * (TokenRun) also dies with that job attempt and its claim. A token a person revoked (an
     * actor named) answers `revoked` first, whenever its session or run ended: its use after that is
     * what a leak inquiry looks for. Otherwise `ended` is answered before `revoked` and `expired`: a
     * run's token is revoked by its runner at its run's end, and its use after that is routine, not
     * a leak (decision 0048, review fixes and loose ends).
     */
    verify(secret: string): Promise<TokenCheck>;
    /**
     * The tokens that may still open the API (unrevoked and unexpired on the database clock), oldest
     * first, without secrets; `all`: every token ever made, revoked and expired ones too (a run of
     * `baton up` with an API leaves one per job, so this grows with the jobs).
     */
    list(params?: TokenListParams): Promise<readonly Token[]>;
    /** The token with this id (revoked or expired too), without its secret; null if unknown. */
    get(id: string): Promise<Token | null>;
    /** Revokes it and writes `token:revoked`; false if it was already revoked; NotFoundError if unknown. */
    revoke(params: TokenRevokeParams): Promise<boolean>;
    /** Writes `auth:refused`: a request beyond its token's scope, which changed nothing else. */
    refused(refusal: AuthRefusal): Promise<void>;
  };
}
