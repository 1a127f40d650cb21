/**
 * GitHub's rate limits, as the client meets them: what octokit's throttling and retry plugins are
 * told to wait (`rateLimitPolicy`), and the error a limit not waited out ends in
 * (`GithubRateLimitedError`, naming when it lifts). The sync, the projector and a webhook wait as
 * GitHub says; the re-check before a run does not wait a primary limit (decision 0013).
 */
import { GithubUnavailableError } from '../core/errors.js';
import { writePacing } from './pace.js';

/** The longest secondary limit a `brief` client waits out (GitHub asks for 60 s when it says nothing). */
const BRIEF_WAIT_MAX_S = 10;
/** The retry plugin's statuses not to retry (its defaults), and 429 (a rate limit) for a `brief` client. */
const DO_NOT_RETRY_BRIEF = [400, 401, 403, 404, 410, 422, 429, 451];

/** What the throttling plugin tells of a rate-limited request. */
interface Limited {
  readonly method: string;
  readonly url: string;
}

/**
 * The `retry` and `throttle` options of the client. `wait`: a rate limit is waited as GitHub says,
 * up to `retries` times, each wait logged as it starts. `brief`: a primary limit is never waited,
 * a secondary one once when it lifts within BRIEF_WAIT_MAX_S seconds, and a 429 is not retried by
 * the retry plugin either; the request then fails at once (GithubRateLimitedError).
 */
export function rateLimitPolicy(given: {
  readonly rateLimits?: 'wait' | 'brief' | undefined;
  readonly retries: number;
  readonly retryBaseMs?: number | undefined;
  readonly writePaceMs?: number | undefined;
  readonly log: (line: string) => void;
}) {
  const brief = given.rateLimits === 'brief';
  // Logged only when waited: one that is not ends the request with its own error, which says it.
  const waits = (what: string, after: number, request: Limited, retry: boolean): boolean => {
    if (retry) given.log(`GitHub ${what} on ${request.method} ${request.url}; waiting ${after} s`);
    return retry;
  };
  return {
    retry: {
      retries: given.retries,
      retryAfterBaseValue: given.retryBaseMs ?? 1000,
      ...(brief ? { doNotRetry: DO_NOT_RETRY_BRIEF } : {}),
    },
    throttle: {
      // What a second of GitHub's retry-after or rate-limit reset waits, in ms: 1,000 but in tests.
      retryAfterBaseValue: given.retryBaseMs ?? 1000,
      ...writePacing(given.writePaceMs),
      onRateLimit: (after: number, request: Limited, _o: unknown, count: number) =>
        waits('rate limit reached', after, request, !brief && count < given.retries),
      onSecondaryRateLimit: (after: number, request: Limited, _o: unknown, count: number) =>
        waits(
          'secondary rate limit',
          after,
          request,
          brief ? after <= BRIEF_WAIT_MAX_S && count < 1 : count < given.retries,
        ),
    },
  };
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
