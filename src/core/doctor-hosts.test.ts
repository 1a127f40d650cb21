/**
 * `baton doctor`'s hosts check judges as the alerts do (core/host-alerts.ts): the ops walk's fleet
 * (box-1 live, box-2 enabled and down: BatonHostNotServing; laptop drained 2 h:
 * BatonHostDrainedTooLong) read `3 host(s): 1 live, 0 silent, 2 down`, level ok.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeHosts, type FleetHost } from './doctor-fleet.js';
import { age } from './host-liveness.js';

const host = (over: Partial<FleetHost> & Pick<FleetHost, 'name'>): FleetHost => ({
  enabled: true,
  liveness: 'live',
  lastReportAgeMs: 1_000,
  containment: 'cgroup',
  draining: false,
  jobsActive: 0,
  ...over,
});

test('the hosts check warns, naming host and fix, while BatonHostNotServing or BatonHostDrainedTooLong holds', () => {
  const box2 = host({ name: 'box-2', liveness: 'down', lastReportAgeMs: 600_000 });
  const laptop = host({
    name: 'laptop',
    enabled: false,
    draining: true,
    liveness: 'down',
    lastReportAgeMs: 7_200_000,
  });
  const fleet = [host({ name: 'box-1' }), box2, laptop];
  const judged = judgeHosts(fleet, age);
  assert.equal(judged.level, 'warn');
  assert.match(
    judged.found,
    /^3 host\(s\): 1 live, 1 down, 1 drained; /,
    'drained, as status and hosts say it',
  );
  assert.match(judged.found, /BatonHostNotServing.*: box-2 down/);
  assert.match(judged.found, /BatonHostDrainedTooLong\): laptop \(last report 2\.0 h ago\)/);
  assert.match(judged.fix ?? '', /baton up --host box-2.*baton host retire box-2/);
  assert.match(judged.fix ?? '', /baton up --host laptop.*baton host retire laptop/);
  const recent = judgeHosts([host({ name: 'box-1' }), { ...laptop, lastReportAgeMs: 60_000 }], age);
  assert.deepEqual(
    [recent.level, recent.found],
    ['ok', '2 host(s): 1 live, 1 drained'],
    'a drain of a minute pages nobody',
  );
  const standby = judgeHosts(
    [host({ name: 'box-1' }), host({ name: 'box-3', enabled: false, liveness: 'down' })],
    age,
  );
  assert.deepEqual([standby.level, standby.found], ['ok', '2 host(s): 1 live, 1 disabled']);
});
