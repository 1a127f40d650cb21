/** hosts.retire: an operator forgets a host no `baton up` serves and no job runs on; a register makes it again. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenHost, givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 1, backoffMaxMs: 1 };

export function exerciseHostRetire(harness: Harness): void {
  describe('host retire', () => {
    test('refused while served or holding jobs, then removed with its ledger row; a register makes it again', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term })).ok);
        const retire = () => store.hosts.retire({ name: 'box-1', actor: 'alice@box' });
        const rows = async () => (await store.audit.list()).filter((row) => row.type === 'host:retired');
        assert.deepEqual(await retire(), { outcome: 'serving' }, 'its baton up still serves it');
        await store.sessions.end(session.id);
        assert.deepEqual(await retire(), { outcome: 'busy', jobs: 1 }, 'its placed job awaits rescue');
        assert.deepEqual((await rows()).length, 0, 'a refused retire writes no ledger row');
        assert.equal((await store.hosts.list()).length, 1);
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.jobsRequeued, [job.id]);
        assert.deepEqual(await retire(), { outcome: 'retired' });
        assert.deepEqual(await store.hosts.list(), [], 'gone from the hosts');
        assert.deepEqual(
          (await rows()).map((row) => [row.detail['host'], row.detail['by']]),
          [['box-1', 'alice@box']],
        );
        await assert.rejects(retire(), { code: 'not_found' });
        const again = await givenHost(store);
        assert.deepEqual([again.host.name, again.host.enabled], ['box-1', true], 'registered again as new');
      }));
  });
}
