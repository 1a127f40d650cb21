import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvalidInputError } from './errors.js';
import { defaultStaleAfterMs, heartbeatWindows, validateHeartbeatWindows } from './heartbeat-windows.js';

test('refuses the windows a lease TTL of 4 s used to imply: trust 1,334 ms against a 1,500 ms cadence', () => {
  // up.ts derived heartbeat ceil(4000 / 3) and stale max(3 beats, TTL) from --lease-ttl 4.
  assert.throws(() => validateHeartbeatWindows(1334, 4002), InvalidInputError);
});

test('gives the defaults a trust window with room over the cadence and two beats before the stale threshold', () => {
  const w = validateHeartbeatWindows(2000, 10_000);
  assert.equal(w.cadenceMs, 2250);
  assert.equal(w.trustMs, 6000);
  assert.equal(w.staleAfterMinMs, 7250);
});

test('every accepted setting trusts longer than cadence plus half a beat, and stops two beats before stale', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 1, max: 600_000 }), (hb, stale) => {
      let w;
      try {
        w = validateHeartbeatWindows(hb, stale);
      } catch (error) {
        assert.ok(error instanceof InvalidInputError);
        assert.ok(stale < heartbeatWindows(hb, stale).staleAfterMinMs);
        return;
      }
      assert.ok(w.trustMs >= w.cadenceMs + hb / 2);
      assert.equal(stale - w.trustMs, 2 * hb);
    }),
  );
});

test('a default stale threshold independent of the lease TTL: 10 s, or what a long heartbeat needs', () => {
  assert.equal(defaultStaleAfterMs(2000, 10_000), 10_000);
  assert.equal(defaultStaleAfterMs(5000, 10_000), 18_000);
  validateHeartbeatWindows(5000, defaultStaleAfterMs(5000, 10_000));
});
