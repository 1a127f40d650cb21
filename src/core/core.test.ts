/** The pure domain: validation, the job lifecycle, lease maths, placement and retry policy. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from './errors.js';
import { isAllowedJobTransition, JOB_STATES } from './job.js';
import { renewIntervalMs, trustedUntil } from './lease.js';
import { fleetOf, placeOnFleet, type HostCapacity } from './capacity.js';
import { backoffMs } from './retry.js';
import { KEY_LENGTH_MAX, validateKey, validatePriority } from './validate.js';

describe('validation', () => {
  test('accepts issue keys and any printable string up to the documented length', () => {
    for (const key of ['github:acme/api#1246', 'JIRA-12', 'a'.repeat(KEY_LENGTH_MAX), 'ключ-7']) {
      assert.equal(validateKey(key), key);
    }
  });

  test('refuses empty, over-long, spaced and control-character keys with a reason', () => {
    for (const key of ['', 'a'.repeat(KEY_LENGTH_MAX + 1), 'two words', 'tab\there', 'nl\n', 42]) {
      assert.throws(() => validateKey(key), InvalidInputError);
    }
  });

  test('refuses a negative or fractional priority and says the range', () => {
    assert.throws(() => validatePriority('-1'), /from 0 to 1000/);
    assert.throws(() => validatePriority('1.5'), /whole number/);
    assert.equal(validatePriority('7'), 7);
  });
});

describe('job lifecycle', () => {
  test('allows exactly the documented transitions', () => {
    const allowed = JOB_STATES.flatMap((from) =>
      JOB_STATES.filter((to) => isAllowedJobTransition(from, to)).map((to) => `${from}>${to}`),
    );
    assert.deepEqual(allowed.sort(), [
      'claimed>cancelled',
      'claimed>escalated',
      'claimed>failed',
      'claimed>queued',
      'claimed>running',
      'queued>cancelled',
      'queued>claimed',
      'queued>escalated',
      'running>cancelled',
      'running>done',
      'running>escalated',
      'running>failed',
      'running>oom_killed',
      'running>queued',
    ]);
  });
});

describe('lease maths', () => {
  test('anchors the trust window at the moment the renewal was sent', () => {
    assert.equal(trustedUntil(10_000, 15_000, 1_000), 24_000);
  });

  test('renews at a third of the TTL', () => {
    assert.equal(renewIntervalMs(15_000), 5_000);
  });
});

/** The host placeOnFleet chooses among `hosts`, or why none fits. */
function placeJob(ramMb: number, hosts: readonly HostCapacity[], now: number, staleAfterMs: number) {
  const fleet = fleetOf(hosts);
  const i = placeOnFleet(ramMb, fleet, now, staleAfterMs);
  return typeof i === 'string' ? { ok: false, reason: i } : { ok: true, host: fleet.open[i]?.name };
}

describe('placement', () => {
  const host = (over: Partial<HostCapacity>): HostCapacity => ({
    name: 'h',
    enabled: true,
    heartbeatAt: 1000,
    ramTotalMb: 16_000,
    ramReservedMb: 1_000,
    ramFreeMb: 8_000,
    slotsMax: 2,
    jobsActive: 0,
    ramPromisedMb: 0,
    ramPendingMb: 0,
    ...over,
  });

  test('puts the job on the live enabled host with the most RAM available', () => {
    const r = placeJob(2_000, [host({ name: 'a', ramFreeMb: 4_000 }), host({ name: 'b' })], 1500, 5000);
    assert.deepEqual(r, { ok: true, host: 'b' });
  });

  test('prefers a host whose heartbeat is fresh to one gone quiet, even with less RAM', () => {
    const quiet = host({ name: 'a', heartbeatAt: 1000, ramFreeMb: 12_000 });
    const fresh = host({ name: 'b', heartbeatAt: 3500, ramFreeMb: 2_000 });
    assert.deepEqual(placeJob(1_000, [quiet, fresh], 4000, 5000), { ok: true, host: 'b' });
    assert.deepEqual(
      placeJob(3_000, [quiet, fresh], 4000, 5000),
      { ok: true, host: 'a' },
      'if it alone fits',
    );
  });

  test('never places on a disabled (standby) or silent host', () => {
    const r = placeJob(
      100,
      [host({ name: 'a', enabled: false }), host({ name: 'b', heartbeatAt: 0 })],
      9000,
      5000,
    );
    assert.deepEqual(r, { ok: false, reason: 'no enabled host is live' });
  });

  test('counts RAM placed but not yet started against the measured free RAM', () => {
    const r = placeJob(3_000, [host({ name: 'a', ramFreeMb: 5_000, ramPendingMb: 2_500 })], 1000, 5000);
    assert.deepEqual(r, { ok: false, reason: 'needs 3000 MB; the most free is 2500 MB on a' });
  });

  test('counts the budgets of active jobs and the reserve against the total', () => {
    const h = host({ name: 'a', ramTotalMb: 4_000, ramReservedMb: 500, ramPromisedMb: 2_000 });
    assert.deepEqual(placeJob(1_500, [h], 1000, 5000), { ok: true, host: 'a' });
    assert.equal(placeJob(1_501, [h], 1000, 5000).ok, false);
  });

  test('says a job needs more RAM than any enabled host can ever give, full or not, whatever is free now', () => {
    const hosts = [
      host({ name: 'a', ramTotalMb: 4_096, ramReservedMb: 512, jobsActive: 2 }),
      host({ name: 'b', ramTotalMb: 8_192, ramReservedMb: 512, ramFreeMb: 1_680 }),
      host({ name: 'c', ramTotalMb: 64_000, enabled: false }),
    ];
    const r = placeJob(9_000, hosts, 1000, 5000);
    assert.equal(r.ok, false);
    assert.match(
      r.reason ?? '',
      /^needs 9000 MB, more than any enabled host can ever give \(the largest: 7680 MB/,
    );
    assert.deepEqual(placeJob(7_680, hosts, 1000, 5000), {
      ok: false,
      reason: 'needs 7680 MB; the most free is 1680 MB on b',
    });
  });

  test('waits when every host is at its job limit', () => {
    const r = placeJob(0, [host({ jobsActive: 2 })], 1000, 5000);
    assert.deepEqual(r, { ok: false, reason: 'every live host is at its job limit' });
  });

  test('breaks ties by fewer active jobs, then by name in code-unit order (as hosts.list sorts)', () => {
    const hosts = [
      host({ name: 'b', jobsActive: 1 }),
      host({ name: 'a', jobsActive: 1 }),
      host({ name: 'B' }),
    ];
    assert.deepEqual(placeJob(0, hosts, 1000, 5000), { ok: true, host: 'B' });
    assert.deepEqual(placeJob(0, hosts.slice(0, 2), 1000, 5000), { ok: true, host: 'a' });
    assert.deepEqual(placeJob(0, [host({ name: 'a' }), host({ name: 'B' })], 1000, 5000), {
      ok: true,
      host: 'B',
    });
  });

  test('passes over a host filled during the pass, and names the roomiest host with a slot', () => {
    const fleet = fleetOf([host({ name: 'a', ramFreeMb: 12_000 }), host({ name: 'b', ramFreeMb: 3_000 })]);
    const open = [...fleet.open];
    open[0] = host({ name: 'a', ramFreeMb: 12_000, jobsActive: 2 });
    assert.equal(placeOnFleet(1_000, { ...fleet, open }, 1000, 5000), 1);
    assert.equal(
      placeOnFleet(4_000, { ...fleet, open }, 1000, 5000),
      'needs 4000 MB; the most free is 3000 MB on b',
    );
  });

  test('tells a fleet with no host, none enabled and none live apart', () => {
    const at = (hosts: HostCapacity[], now = 1000) => placeJob(1, hosts, now, 5000);
    assert.deepEqual(at([]), { ok: false, reason: 'no host has registered: run `baton up`' });
    assert.deepEqual(at([host({ enabled: false })]), {
      ok: false,
      reason: 'every host is disabled (standby)',
    });
    assert.deepEqual(at([host({ jobsActive: 2 })], 9000), { ok: false, reason: 'no enabled host is live' });
  });
});

describe('retry policy', () => {
  test('doubles the backoff per attempt up to the cap', () => {
    const p = { backoffBaseMs: 1000, backoffMaxMs: 5000 };
    assert.deepEqual(
      [1, 2, 3, 4].map((a) => backoffMs(p, a)),
      [1000, 2000, 4000, 5000],
    );
  });
});
