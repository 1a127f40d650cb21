import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock } from '../core/time.js';
import { Nap } from './nap.js';

/** A clock whose sleeps end only when aborted, recording each one. */
function stuckClock(): { clock: Clock; sleeps: number[] } {
  const sleeps: number[] = [];
  const clock: Clock = {
    wallNow: () => 0,
    monotonicNowMs: () => 0,
    sleep: (ms, signal) => {
      sleeps.push(ms);
      return new Promise((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
    },
  };
  return { clock, sleeps };
}

test('wake ends a pause in progress', async () => {
  const { clock } = stuckClock();
  const nap = new Nap();
  const pause = nap.sleep(clock, 60_000, new AbortController().signal);
  nap.wake();
  await pause;
});

test('a wake during the work ends the next pause at once, and only that one', async () => {
  const { clock, sleeps } = stuckClock();
  const nap = new Nap();
  nap.wake();
  await nap.sleep(clock, 60_000, new AbortController().signal);
  assert.deepEqual(sleeps, [], 'no sleep at all after an early wake');
  const stop = new AbortController();
  const second = nap.sleep(clock, 60_000, stop.signal);
  assert.deepEqual(sleeps, [60_000], 'the wake was used up');
  stop.abort();
  await second;
});
