/** `every`, the daemon's setInterval, on a fake clock. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../test/support/fake-clock.js';
import { every } from './time.js';

test('every ticks once per interval of the clock, never before, and not after it is stopped', async () => {
  const clock = new FakeClock();
  const stop = new AbortController();
  let ticks = 0;
  const loop = every(clock, 1_000, () => ticks++, stop.signal);
  await clock.sleeping();
  clock.advance(999);
  await Promise.resolve();
  assert.equal(ticks, 0);
  for (let i = 1; i <= 3; i++) {
    clock.advance(i === 1 ? 1 : 1_000);
    await clock.sleeping();
    assert.equal(ticks, i);
  }
  stop.abort();
  await loop;
  clock.advance(10_000);
  assert.equal(ticks, 3);
  assert.equal(clock.pending, 0);
});

test('a tick that never settles does not hold back the next one', async () => {
  const clock = new FakeClock();
  const stop = new AbortController();
  let ticks = 0;
  const loop = every(clock, 500, () => void (ticks++, new Promise(() => undefined)), stop.signal);
  for (let i = 1; i <= 2; i++) {
    await clock.sleeping();
    clock.advance(500);
  }
  await clock.sleeping();
  assert.equal(ticks, 2);
  stop.abort();
  await loop;
});
