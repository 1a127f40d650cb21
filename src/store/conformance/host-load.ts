/**
 * A host's load as hosts.list() computes it from the jobs table: only the jobs claimed or
 * running on that host count, whatever else the table holds (finished history, queued jobs,
 * other hosts' jobs); pending RAM is what a placed job promised and the host's measured free RAM
 * cannot show yet.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fleetOf } from '../../core/capacity.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { sleep, withFixture, type Harness } from './harness.js';

async function load(store: Store, name: string) {
  const host = (await store.hosts.list()).find((candidate) => candidate.name === name);
  assert.ok(host !== undefined, `host ${name} is listed`);
  return { active: host.jobsActive, promised: host.ramPromisedMb, pending: host.ramPendingMb };
}

export function exerciseHostLoad(harness: Harness): void {
  describe('host load', () => {
    test("counts only a host's own active jobs, a running one as pending until the host's next heartbeat", () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store, 'box-1');
        await givenHost(store, 'box-2');
        const term = await givenLeader(store);
        const placed = async (key: string, ramMb: number, host: string) => {
          const { job } = await store.jobs.enqueue({ key, ramMb });
          const result = await store.dispatch.place({ id: job.id, host, term });
          assert.ok(result.ok);
          return result.job;
        };
        const done = await placed('done', 4000, 'box-1');
        const guard = (job: typeof done) => ({ id: job.id, session: session.id, epoch: job.epoch });
        assert.ok((await store.jobs.start(guard(done))).ok);
        assert.ok((await store.jobs.finish({ ...guard(done), status: 'done' })).ok);
        await store.jobs.enqueue({ key: 'queued', ramMb: 8000 });
        await placed('elsewhere', 2000, 'box-2');
        assert.deepEqual(await load(store, 'box-1'), { active: 0, promised: 0, pending: 0 });

        const running = await placed('running', 1000, 'box-1');
        await placed('claimed', 300, 'box-1');
        assert.deepEqual(await load(store, 'box-1'), { active: 2, promised: 1300, pending: 1300 });
        await sleep(5); // the database clock moves past the host's last heartbeat (its registration)
        assert.ok((await store.jobs.start(guard(running))).ok);
        assert.deepEqual(await load(store, 'box-1'), { active: 2, promised: 1300, pending: 1300 });
        // The heartbeat's free RAM now shows the running job; the claimed one is still pending.
        assert.ok(await store.hosts.heartbeat({ name: 'box-1', session: session.id, ramFreeMb: 9000 }));
        assert.deepEqual(await load(store, 'box-1'), { active: 2, promised: 1300, pending: 300 });
        assert.deepEqual(await load(store, 'box-2'), { active: 1, promised: 2000, pending: 2000 });
      }));
  });

  describe('fleet', () => {
    test('is the enabled hosts with a free slot, with their load, and counts of every host', () =>
      withFixture(harness, async ({ store }) => {
        assert.deepEqual(await store.hosts.fleet(), {
          open: [],
          hosts: 0,
          enabled: 0,
          lastBeatAt: null,
          largestBudgetMb: null,
        });
        await givenHost(store, 'box-3', { slotsMax: 1 });
        await givenHost(store, 'box-1');
        await givenHost(store, 'box-2');
        await givenHost(store, 'box-4', { slotsMax: 1 });
        const term = await givenLeader(store);
        for (const [key, host] of [
          ['a', 'box-1'],
          ['b', 'box-3'],
          ['c', 'box-1'],
          ['d', 'box-2'],
        ] as const) {
          const { job } = await store.jobs.enqueue({ key, ramMb: 500 });
          assert.ok((await store.dispatch.place({ id: job.id, host, term })).ok);
        }
        await store.hosts.setEnabled({ name: 'box-2', enabled: false });
        const fleet = await store.hosts.fleet();
        assert.deepEqual(
          fleet.open.map((capacity) => [capacity.name, capacity.jobsActive, capacity.ramPromisedMb]),
          [
            ['box-1', 2, 1000],
            ['box-4', 0, 0],
          ],
          'box-2 is disabled and box-3 full',
        );
        assert.deepEqual([fleet.hosts, fleet.enabled, fleet.largestBudgetMb], [4, 3, 15_000]);
        const listed = (await store.hosts.list()).map((host) => ({
          name: host.name,
          enabled: host.enabled,
          heartbeatAt: host.heartbeatAt,
          ramTotalMb: host.ramTotalMb,
          ramReservedMb: host.ramReservedMb,
          ramFreeMb: host.ramFreeMb,
          slotsMax: host.slotsMax,
          jobsActive: host.jobsActive,
          ramPromisedMb: host.ramPromisedMb,
          ramPendingMb: host.ramPendingMb,
          agentCommand: host.agentCommand,
        }));
        assert.deepEqual(fleet, fleetOf(listed), 'as the hosts list says');
      }));
  });

  describe('host rejoin', () => {
    test("keeps the operator's enable or disable across rejoins that do not set the flag", () =>
      withFixture(harness, async ({ store }) => {
        const rejoin = async (enabled?: boolean) => {
          const session = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 3 });
          const capacity = { ramTotalMb: 1, ramReservedMb: 0, ramFreeMb: 1, slotsMax: 1 };
          const host = await store.hosts.register({
            name: 'box-1',
            session: session.id,
            enabled,
            ...capacity,
          });
          await store.sessions.end(session.id);
          return host.enabled;
        };
        assert.equal(await rejoin(), true, 'a new host is enabled');
        assert.equal(await rejoin(false), false, 'a standby given explicitly');
        await store.hosts.setEnabled({ name: 'box-1', enabled: true });
        assert.equal(await rejoin(), true, 'the enable survives a rejoin');
        await store.hosts.setEnabled({ name: 'box-1', enabled: false });
        assert.equal(await rejoin(), false, 'so does the disable');
        assert.equal(await rejoin(true), true);
      }));
  });
}
