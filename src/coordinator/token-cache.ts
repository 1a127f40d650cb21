/**
 * A short memory of verified tokens, so that a request's token check is not a statement of its
 * own (decision 0012, amendment). Only a token that opened is kept, for at most
 * `TOKEN_CACHE_MS` on this process's monotonic clock; a secret that opens nothing is asked of
 * the store every time. Revoking through this process (`baton token revoke` over the API, the
 * runner's end of an agent run) drops the token at once; a revocation, an expiry or the end of
 * an agent token's session elsewhere bites here within `TOKEN_CACHE_MS`.
 */
import type { Token } from '../core/token.js';
import { nodeCrypto } from '../os/node-crypto.js';

/** How long a verified token is trusted without asking the store again. */
const TOKEN_CACHE_MS = 2_000;
/** Beyond this many tokens the oldest entries go first (each is a few hundred bytes). */
const TOKEN_CACHE_MAX = 1_000;
/** How long a revoked id is remembered, against a check that was in flight when it was revoked. */
const FORGOTTEN_KEEP_MS = 60_000;

interface Entry {
  readonly token: Token;
  /** When it was verified, on this process's monotonic clock (ms). */
  readonly verifiedMs: number;
}

export class TokenCache {
  /** By the secret's sha256: the secret itself is not kept. Insertion order is age order. */
  private readonly entries = new Map<string, Entry>();
  /**
   * Ids forgotten lately, and when: a check that was already asking the store when its token
   * was revoked must not put it back.
   */
  private readonly forgotten = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly ageMs = TOKEN_CACHE_MS,
  ) {}

  get(secret: string): Token | null {
    const key = digest(secret);
    const entry = this.entries.get(key);
    if (entry === undefined) return null;
    if (this.now() - entry.verifiedMs >= this.ageMs) {
      this.entries.delete(key);
      return null;
    }
    return entry.token;
  }

  /** Keeps a token the store has just verified, asked at `askedAt` (this cache's clock). */
  put(secret: string, token: Token, askedAt: number): void {
    const dropped = this.forgotten.get(token.id);
    if (dropped !== undefined && dropped >= askedAt) return;
    const key = digest(secret);
    this.entries.delete(key);
    this.entries.set(key, { token, verifiedMs: this.now() });
    if (this.entries.size > TOKEN_CACHE_MAX) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /**
   * Forgets the token with this id (it was revoked), and the dashboard sign-ins made from it,
   * which open nothing once it is revoked: their next use asks the store.
   */
  forget(id: string): void {
    const now = this.now();
    for (const [old, at] of this.forgotten) if (now - at >= FORGOTTEN_KEEP_MS) this.forgotten.delete(old);
    this.forgotten.set(id, now);
    for (const [key, entry] of this.entries) {
      if (entry.token.id !== id && entry.token.loginOf !== id) continue;
      this.entries.delete(key);
      this.forgotten.set(entry.token.id, now);
    }
  }

  /** This cache's clock, to stamp a check before it asks the store. */
  clock(): number {
    return this.now();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * sha256 of the secret. crypto.hash (Node 20.12 and later) does it in one call, without the Hash
 * object and its stream machinery that createHash builds for every request: 0.27 µs against
 * 1.23 µs once compiled; run by the interpreter alone (as `baton serve`'s first requests are),
 * createHash was 4 % of the server's CPU per request.
 */
function digest(secret: string): string {
  const crypto = nodeCrypto();
  return typeof crypto.hash === 'function'
    ? crypto.hash('sha256', secret, 'base64url')
    : crypto.createHash('sha256').update(secret).digest('base64url');
}

/** The process's one cache: every coordinator in the process shares it, so a revoke anywhere here bites at once. */
export const verifiedTokens = new TokenCache(() => performance.now());
