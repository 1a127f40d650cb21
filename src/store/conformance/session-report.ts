/**
 * The session report's escalations and force-releases (migration 0049, decision 0060): an
 * escalation under a session's claim counts 1 (the claim ends `escalated`; no ledger type holds
 * "escalat", which the count once matched), and a claim an operator force-released reads
 * `force_released`, not the `released` of a holder's own release, told by its ledger row.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseSessionReport(harness: Harness): void {
  describe('session report outcomes', () => {
    test('an escalation counts 1; a force-release reads force_released, a release released', () =>
      withFixture(harness, async ({ store }) => {
        const worker = await givenSession(store);
        const bystander = await givenSession(store, 'host-b');
        for (const key of ['esc', 'forced', 'let-go']) await givenTask(store, key);
        for (const key of ['esc', 'forced', 'let-go']) {
          assert.ok((await store.claims.acquire({ key, session: worker.id })).ok);
        }
        const escalated = await store.lifecycle.escalate({
          key: 'esc',
          reason: 'need a human',
          by: { name: 'agent', session: worker.id },
          claim: { session: worker.id, epoch: 1 },
        });
        assert.ok(escalated.ok);
        const by = { name: 'ops', session: bystander.id };
        assert.ok((await store.claims.forceRelease({ key: 'forced', reason: 'taken back', by })).ok);
        const released = await store.claims.release({
          key: 'let-go',
          session: worker.id,
          epoch: 1,
          outcome: 'released',
        });
        assert.ok(released.ok);
        // The bystander's own claim of the forced task, released by itself: not force-released.
        assert.ok((await store.claims.acquire({ key: 'forced', session: bystander.id })).ok);
        await store.claims.release({ key: 'forced', session: bystander.id, epoch: 2, outcome: 'released' });

        const reports = new Map((await store.reports.sessions()).map((report) => [report.session, report]));
        const mine = reports.get(worker.id);
        assert.deepEqual(
          mine?.issuesWorked.map((worked) => [worked.key, worked.epoch, worked.outcome]),
          [
            ['esc', 1, 'escalated'],
            ['forced', 1, 'force_released'],
            ['let-go', 1, 'released'],
          ],
        );
        assert.equal(mine?.escalations, 1);
        const theirs = reports.get(bystander.id);
        assert.deepEqual(
          theirs?.issuesWorked.map((worked) => [worked.key, worked.epoch, worked.outcome]),
          [['forced', 2, 'released']],
        );
        assert.equal(theirs?.escalations, 0, 'forcing a release is no escalation');
      }));
  });
}
