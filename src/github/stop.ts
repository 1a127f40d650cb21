/**
 * A stop of a GitHub pass: `baton up` leaving (its leader duties' signal) or `baton github sync
 * --every` ended. It ends a request under way and a rate limit's wait at once (rate-limit.ts), so
 * a stop does not wait for GitHub's reset (decision 0013, amendment "a stop during a spent limit").
 */

/**
 * A stop (the signal of a sync or projector pass: `baton up` leaving, `github sync --every`
 * ended) ended a request or the wait for a rate limit; not GitHub's failure. What was applied
 * before it stays applied: the sync's cursor and the outbox's rows move only after their work.
 */
export class GithubStoppedError extends Error {}

/**
 * Octokit's fetch: each request abandoned after `timeoutMs` (then retried by the retry plugin), and
 * at once when the pass's stop (octokit's `request.signal`) comes. A stop fails it as an AbortError
 * whatever the signal's reason, which octokit passes on as it is and the retry plugin does not retry.
 */
export async function stoppableFetch(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
  const stop = init.signal ?? undefined;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await fetch(url, {
      ...init,
      signal: stop === undefined ? timeout : AbortSignal.any([stop, timeout]),
    });
  } catch (error) {
    if (stop?.aborted === true) throw new DOMException('stopped', 'AbortError');
    throw error;
  }
}
