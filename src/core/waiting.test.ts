import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitingClass } from './waiting.js';
import { WAITING_FOR_AGENT_COMMAND, fleetOf, placeOnFleet, type HostCapacity } from './capacity.js';
import { waitingForWorkspace } from './workspace-lock.js';

test('classes the reasons the dispatcher writes for a waiting job', () => {
  const host = {
    name: 'box',
    enabled: true,
    heartbeatAt: 0,
    ramTotalMb: 4000,
    ramReservedMb: 0,
    ramFreeMb: 1000,
    slotsMax: 1,
    jobsActive: 0,
    ramPromisedMb: 0,
    ramPendingMb: 0,
  };
  const placeJob = (ramMb: number, hosts: HostCapacity[], now: number, staleAfterMs: number) =>
    placeOnFleet(ramMb, fleetOf(hosts), now, staleAfterMs);
  const reason = (p: number | string): string => (typeof p === 'number' ? 'placed' : p);
  assert.equal(waitingClass(reason(placeJob(8000, [host], 0, 10_000))), 'ram');
  assert.equal(waitingClass(reason(placeJob(1, [{ ...host, jobsActive: 1 }], 0, 10_000))), 'slots');
  assert.equal(waitingClass(reason(placeJob(1, [], 0, 10_000))), 'no_host');
  assert.equal(waitingClass(reason(placeJob(1, [{ ...host, enabled: false }], 0, 10_000))), 'no_host');
  assert.equal(waitingClass(reason(placeJob(1, [host], 60_000, 10_000))), 'no_host');
  // A job without a command, where the only free hosts have no agent command (decision 0047, review
  // fixes): the pass read it because one that has is live, so that one is full.
  const without = { ...host, agentCommand: false };
  assert.equal(waitingClass(reason(placeOnFleet(1, fleetOf([without]), 0, 10_000, true))), 'slots');
  assert.equal(waitingClass(WAITING_FOR_AGENT_COMMAND), 'agent_command');
  const holder = { session: 3, host: 'box', jobId: 7, since: 0, epoch: 1 };
  assert.equal(waitingClass(waitingForWorkspace('api', holder)), 'workspace_held');
  // dispatch-plan.ts claimedReason: its task held by a person's claim, or an earlier run stopping.
  assert.equal(waitingClass('waiting for github:acme/api#7, claimed by session 4 on box-1'), 'task_held');
  assert.equal(waitingClass('waiting for design approval'), 'gate');
  assert.equal(waitingClass('SKIPPED workspace_unresolved: no workspace'), 'workspace_unresolved');
  assert.equal(waitingClass('waiting for design approval'), 'gate');
  assert.equal(waitingClass('something new'), 'other');
});
