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
  // One controller per request, its listener on the long-lived stop removed when the request ends:
  // AbortSignal.any([stop, …]) left a dependant on the stop for every request on Node 20
  // (nodejs/node#55351), a leak over a `baton up` of days.
  const request = new AbortController();
  const abort = (): void => request.abort(stop?.reason);
  // Left to run out (unref'd, as AbortSignal.timeout's): it bounds the body's read too, after the return.
  setTimeout(() => request.abort(new DOMException('timed out', 'TimeoutError')), timeoutMs).unref();
  if (stop?.aborted === true) abort();
  else stop?.addEventListener('abort', abort, { once: true });
  try {
    return await fetch(url, { ...init, signal: request.signal });
  } catch (error) {
    if (stop?.aborted === true) throw new DOMException('stopped', 'AbortError');
    throw error;
  } finally {
    stop?.removeEventListener('abort', abort);
  }
}
