/**
 * The GitHub client's fetch (src/github/stop.ts) on a stop signal that lives as long as `baton up`:
 * many requests leave nothing on it. AbortSignal.any([stop, timeout]) per request left a dependant
 * on the stop for each on Node 20 (nodejs/node#55351), a leak over days of passes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stoppableFetch } from '../../src/github/stop.js';

/** What hangs on the signal: its abort listeners, and the signals AbortSignal.any made of it. */
function held(signal: AbortSignal): number {
  const dependants = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set =
    dependants === undefined ? undefined : (signal as unknown as Record<symbol, unknown>)[dependants];
  // Node's own Set (primordials' SafeSet), not an instance of this realm's Set.
  const size = (set as { size?: unknown } | undefined)?.size;
  return getEventListeners(signal, 'abort').length + (typeof size === 'number' ? size : 0);
}

test('many requests on one stop signal leave no listener or dependant on it', async () => {
  const server = createServer((_req, res) => res.end('{}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const stop = new AbortController();
    for (let i = 0; i < 50; i++) {
      const response = await stoppableFetch(url, { signal: stop.signal }, 60_000);
      assert.equal(await response.text(), '{}');
    }
    assert.equal(held(stop.signal), 0);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a stop during a request ends it as an AbortError, the listener gone', async () => {
  const server = createServer(() => undefined); // never answers
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const stop = new AbortController();
    const pending = stoppableFetch(url, { signal: stop.signal }, 60_000);
    setImmediate(() => stop.abort());
    await assert.rejects(pending, { name: 'AbortError', message: 'stopped' });
    assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
