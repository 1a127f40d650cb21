/**
 * GitHub's rate limits, as the client meets them. Octokit's throttling plugin paces writes and
 * reads a limit, but no longer waits one out: `waitingOut` does (decision 0013, amendment "a stop
 * during a spent limit"), by the plugin's own rules (`limitMet`: how long, from `retry-after` or
 * `x-ratelimit-reset`), as many times as it did (`waitsFor`), each wait logged as it starts, in a
 * sleep that a stop of the pass ends at once (GithubStoppedError) instead of up to an hour later.
 * A limit not waited out ends in GithubRateLimitedError, naming when it lifts. The sync and the
 * projector wait as GitHub says; the re-check before a run barely waits (`brief`); a webhook
 * delivery does not wait at all (`never`: GitHub gives it 10 s).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GithubUnavailableError } from '../core/errors.js';
import { writePacing } from './pace.js';
import { GithubStoppedError } from './stop.js';

/** How a client meets a spent rate limit (GithubApiOptions.rateLimits). */
export type RateLimits = 'wait' | 'brief' | 'never';

/** The longest secondary limit a `brief` client waits out (GitHub asks for 60 s when it says nothing). */
const BRIEF_WAIT_MAX_S = 10;
/** What the throttling plugin waits for a secondary limit whose answer has no `retry-after`. */
const SECONDARY_FALLBACK_S = 60;
/**
 * The retry plugin's statuses not to retry (its defaults), and 429: a rate limit is waited here,
 * as GitHub says, not retried on the retry plugin's 1, 4, 9 s.
 */
const DO_NOT_RETRY = [400, 401, 403, 404, 410, 422, 429, 451];

/**
 * The `retry` and `throttle` options of the client: the retry plugin retries 5xx and network
 * failures; the throttling plugin paces writes (pace.ts) and is told never to wait a limit, which
 * then fails the request at once and comes to `waitingOut`.
 */
export function rateLimitPolicy(given: {
  readonly retries: number;
  readonly retryBaseMs?: number | undefined;
  readonly writePaceMs?: number | undefined;
}) {
  return {
    retry: {
      retries: given.retries,
      retryAfterBaseValue: given.retryBaseMs ?? 1000,
      doNotRetry: DO_NOT_RETRY,
    },
    throttle: {
      ...writePacing(given.writePaceMs),
      onRateLimit: () => false,
      onSecondaryRateLimit: () => false,
    },
  };
}

/** A limit a 403 or 429 says is spent, and the seconds the throttling plugin waited for it. */
interface LimitMet {
  readonly kind: 'primary' | 'secondary';
  readonly afterS: number;
}

/**
 * The limit of a failed request as octokit's throttling plugin (11.x) reads it, which waited it
 * until this module did: "secondary rate" in the message, `retry-after` seconds (60 when absent);
 * else `x-ratelimit-remaining: 0`, until a second past `x-ratelimit-reset` (GitHub: ask again
 * after the reset); else a bare `retry-after` (a plain 429 of a proxy or GitHub Enterprise Server),
 * a secondary limit, as `rateLimited` reads it: 429 is not retried, so it must be waited here.
 * Null: no limit to wait for (a 403 for the token's rights, say).
 */
export function limitMet(error: unknown, nowMs: number): LimitMet | null {
  const status = (error as { status?: unknown }).status;
  if (status !== 403 && status !== 429) return null;
  const headers = (error as { response?: { headers?: Record<string, unknown> } }).response?.headers ?? {};
  const secondary = /\bsecondary rate\b/i.test(error instanceof Error ? error.message : '');
  if (!secondary && headers['x-ratelimit-remaining'] === '0') {
    const resetMs = Math.trunc(Number(headers['x-ratelimit-reset']) || 0) * 1000;
    return { kind: 'primary', afterS: Math.max(Math.ceil((resetMs - nowMs) / 1000) + 1, 0) };
  }
  const retryAfter = Number(headers['retry-after']);
  if (secondary || Number.isFinite(retryAfter))
    return { kind: 'secondary', afterS: retryAfter || SECONDARY_FALLBACK_S };
  return null;
}

/**
 * Whether a client waits out the limit met after `waited` waits of this request. `wait` (the
 * sync, the projector): `retries` times. `brief` (the re-check before a run, which a placed job
 * waits on): a primary limit never (its reset is up to an hour away), a secondary one once when
 * it lifts within BRIEF_WAIT_MAX_S. `never` (a webhook delivery): not at all.
 */
export function waitsFor(limit: LimitMet, rateLimits: RateLimits, waited: number, retries: number): boolean {
  if (rateLimits === 'never') return false;
  if (rateLimits === 'brief')
    return limit.kind === 'secondary' && limit.afterS <= BRIEF_WAIT_MAX_S && waited < 1;
  return waited < retries;
}

/**
 * Sends `send` again after each rate limit the client waits out (waitsFor), each wait logged as it
 * starts and `baseMs` long a second (BATON_GITHUB_RETRY_BASE_MS; 1,000). The wait ends at once on
 * `signal`, with GithubStoppedError, leaving no timer behind.
 */
export async function waitingOut<T>(
  send: () => Promise<T>,
  given: {
    /** `GET /repos/…`, as the log names the request. */
    readonly request: string;
    readonly rateLimits: RateLimits;
    readonly retries: number;
    readonly baseMs: number;
    readonly log: (line: string) => void;
    readonly signal: AbortSignal | undefined;
  },
): Promise<T> {
  const { request, signal } = given;
  for (let waited = 0; ; waited++) {
    try {
      return await send();
    } catch (error) {
      const limit = limitMet(error, Date.now());
      if (limit === null || !waitsFor(limit, given.rateLimits, waited, given.retries)) throw error;
      const what = limit.kind === 'primary' ? 'rate limit reached' : 'secondary rate limit';
      given.log(`GitHub ${what} on ${request}; waiting ${limit.afterS} s`);
      await sleep(limit.afterS * given.baseMs, undefined, { signal }).catch((cause: unknown) => {
        if (signal?.aborted !== true) throw cause;
        const until = rateLimited(error, error instanceof Error ? error.message : '')?.resetAt ?? null;
        const waiting = `stopped while waiting out the ${limit.kind} rate limit`;
        const where = request.split('?')[0] ?? request;
        throw new GithubStoppedError(
          `GitHub ${where}: ${waiting}${until === null ? '' : `, spent until ${until}`}`,
        );
      });
    }
  }
}

/**
 * GitHub refused the request for a spent rate limit: a primary one (`x-ratelimit-remaining: 0`,
 * `resetAt` from `x-ratelimit-reset`) or a secondary one (`retry-after` seconds, or GitHub's
 * "secondary rate limit" message), past what this client waits (GithubApiOptions.rateLimits).
 */
export class GithubRateLimitedError extends GithubUnavailableError {
  readonly kind: 'primary' | 'secondary';
  /** When GitHub says the limit lifts (ISO 8601), or null when it did not say. */
  readonly resetAt: string | null;

  constructor(
    message: string,
    limit: { readonly kind: 'primary' | 'secondary'; readonly resetAt: string | null },
  ) {
    const until = limit.resetAt === null ? 'for a while' : `until ${limit.resetAt}`;
    super(
      `${message}; the ${limit.kind} rate limit of this token is spent ${until}`,
      'wait for the reset (`baton up --github` asks again on its own); a token used by Baton alone, ' +
        'or a longer --github-every, spends the limit more slowly',
    );
    this.kind = limit.kind;
    this.resetAt = limit.resetAt;
  }
}

/** A 403 or 429 of a spent rate limit, read as octokit's throttling plugin reads it; else null. */
export function rateLimited(
  error: unknown,
  described: string,
): { kind: 'primary' | 'secondary'; resetAt: string | null } | null {
  const status = (error as { status?: unknown }).status;
  if (status !== 403 && status !== 429) return null;
  const headers = (error as { response?: { headers?: Record<string, unknown> } }).response?.headers ?? {};
  const at = (seconds: number): string | null =>
    Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000).toISOString() : null;
  if (headers['x-ratelimit-remaining'] === '0' && !/\bsecondary rate\b/i.test(described))
    return { kind: 'primary', resetAt: at(Number(headers['x-ratelimit-reset'])) };
  const retryAfter = Number(headers['retry-after']);
  if (/\bsecondary rate\b/i.test(described) || Number.isFinite(retryAfter))
    return {
      kind: 'secondary',
      resetAt: Number.isFinite(retryAfter) ? at(Date.now() / 1000 + retryAfter) : null,
    };
  return null;
}
