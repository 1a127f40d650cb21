/**
 * The rate-limit wait of the GitHub client (src/github/rate-limit.ts), without a server: how long
 * it waits (the throttling plugin's rules: `retry-after`, or a second past `x-ratelimit-reset`), how
 * many times (the client's `rateLimits`), each wait logged as it starts, and a stop that ends a wait
 * at once, leaving no timer behind (decision 0013, amendment "a stop during a spent limit").
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { limitMet, rateLimited, waitingOut, waitsFor, type RateLimits } from '../../src/github/rate-limit.js';
import { GithubStoppedError } from '../../src/github/stop.js';

/** A failed request as octokit's request error carries it. */
function refused(status: number, message: string, headers: Record<string, string>): Error {
  return Object.assign(new Error(message), { status, response: { headers } });
}

const primary = (resetS: number) =>
  refused(403, 'API rate limit exceeded for user ID 1.', {
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(resetS),
  });
const secondary = (retryAfter?: string) =>
  refused(
    403,
    'You have exceeded a secondary rate limit.',
    retryAfter === undefined ? {} : { 'retry-after': retryAfter },
  );

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** Sends that always meet `error`, counted; the lines logged. */
function limited(error: Error, rateLimits: RateLimits, signal?: AbortSignal, baseMs = 1) {
  const logs: string[] = [];
  let sends = 0;
  const done = waitingOut(
    () => {
      sends++;
      return Promise.reject(error);
    },
    {
      request: 'GET /repos/acme/api/issues?page=1',
      rateLimits,
      retries: 3,
      baseMs,
      log: (l) => logs.push(l),
      signal,
    },
  ).then(
    () => assert.fail('answered'),
    (e: unknown) => e,
  );
  return { done, logs, sends: () => sends };
}

describe("the GitHub client's rate-limit wait", () => {
  test('reads a limit as the throttling plugin did: a second past the reset, retry-after, or 60 s', () => {
    const now = 1_000_000_000_500;
    assert.deepEqual(limitMet(primary(1_000_000_004), now), { kind: 'primary', afterS: 5 });
    assert.deepEqual(
      limitMet(primary(1_000_000_000 - 90), now),
      { kind: 'primary', afterS: 0 },
      'reset passed',
    );
    assert.deepEqual(limitMet(secondary('7'), now), { kind: 'secondary', afterS: 7 });
    assert.deepEqual(limitMet(secondary(), now), { kind: 'secondary', afterS: 60 });
    assert.deepEqual(limitMet(Object.assign(secondary('7'), { status: 429 }), now), {
      kind: 'secondary',
      afterS: 7,
    });
    assert.equal(limitMet(refused(403, 'Resource not accessible by integration', {}), now), null);
    assert.equal(limitMet(refused(429, 'Too many', { 'x-ratelimit-remaining': '12' }), now), null);
    assert.equal(limitMet(refused(500, 'secondary rate', {}), now), null);
  });

  test('a plain 429 with only retry-after (a proxy, GHES) is a limit waited out, as rateLimited reads it', async () => {
    const plain = refused(429, 'Too Many Requests', { 'retry-after': '3' });
    assert.deepEqual(limitMet(plain, 0), { kind: 'secondary', afterS: 3 });
    assert.equal(rateLimited(plain, plain.message)?.kind, 'secondary');
    const run = limited(refused(429, 'Too Many Requests', { 'retry-after': '0' }), 'wait');
    await run.done;
    assert.equal(run.sends(), 4, 'sent again after each of its 3 waits');
    assert.equal(run.logs.length, 3);
  });

  test('waits as often as its client does: wait 3 times, brief a short secondary once, never not at all', () => {
    const p = { kind: 'primary', afterS: 5 } as const;
    const short = { kind: 'secondary', afterS: 10 } as const;
    const long = { kind: 'secondary', afterS: 11 } as const;
    assert.deepEqual(
      [0, 1, 2, 3].map((n) => waitsFor(p, 'wait', n, 3)),
      [true, true, true, false],
    );
    assert.deepEqual(
      [0, 1].map((n) => waitsFor(short, 'brief', n, 3)),
      [true, false],
    );
    assert.equal(waitsFor(long, 'brief', 0, 3), false);
    assert.equal(waitsFor(p, 'brief', 0, 3), false);
    assert.equal(waitsFor(short, 'never', 0, 3), false);
  });

  test('logs each wait as it starts and gives up after its waits with the limit error', async () => {
    const error = primary(Math.floor(Date.now() / 1000) - 5);
    const run = limited(error, 'wait');
    assert.equal(await run.done, error);
    assert.equal(run.sends(), 4);
    assert.deepEqual(run.logs, [
      'GitHub rate limit reached on GET /repos/acme/api/issues?page=1; waiting 0 s',
      'GitHub rate limit reached on GET /repos/acme/api/issues?page=1; waiting 0 s',
      'GitHub rate limit reached on GET /repos/acme/api/issues?page=1; waiting 0 s',
    ]);
    const never = limited(secondary('1'), 'never');
    assert.equal(((await never.done) as Error).message, 'You have exceeded a secondary rate limit.');
    assert.deepEqual([never.sends(), never.logs.length], [1, 0]);
  });

  test('a stop ends a wait of an hour at once, with no timer left, and nothing is sent again', async () => {
    const held = timers();
    const stop = new AbortController();
    const run = limited(primary(Math.floor(Date.now() / 1000) + 3600), 'wait', stop.signal, 1000);
    while (run.logs.length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.match(
      run.logs[0] ?? '',
      /^GitHub rate limit reached on GET \/repos\/acme\/api\/issues\?page=1; waiting 36\d\d s$/,
    );
    stop.abort();
    const error = await run.done;
    assert.ok(error instanceof GithubStoppedError, String(error));
    assert.match(
      error.message,
      /^GitHub GET \/repos\/acme\/api\/issues: stopped while waiting out the primary rate limit, spent until \d{4}-/,
    );
    assert.equal(run.sends(), 1);
    assert.equal(timers(), held, 'the wait left no timer to hold the process');
    const already = limited(secondary('30'), 'wait', stop.signal, 1000);
    assert.ok((await already.done) instanceof GithubStoppedError, 'a stop before the wait: not waited');
    assert.equal(already.sends(), 1);
  });
});
