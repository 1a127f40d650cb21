import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

export function exerciseObserve(h: Harness): void {
  describe("the operator's reads", () => {
    test('pages jobs newest first by keyset, with filters, and no page repeats or skips a job', () =>
      withFixture(h, async ({ store }) => {
        const ids: number[] = [];
        for (let i = 0; i < 7; i++) ids.push((await store.jobs.enqueue({ key: `k${i}` })).job.id);
        const s = await givenSession(store);
        const claimed = await store.jobs.claimNext({ session: s.id, host: 'box-9' });
        assert.ok(claimed !== null);
        const seen: number[] = [];
        let before: number | undefined;
        for (;;) {
          const page = await store.observe.jobsPage({ limit: 3, beforeId: before });
          if (page.length === 0) break;
          seen.push(...page.map((j) => j.id));
          before = page.at(-1)?.id;
        }
        assert.deepEqual(seen, [...ids].reverse());
        const claimedOnly = await store.observe.jobsPage({ limit: 10, status: ['claimed'] });
        assert.deepEqual(
          claimedOnly.map((j) => [j.id, j.host]),
          [[claimed.id, 'box-9']],
        );
        assert.deepEqual(
          (await store.observe.jobsPage({ limit: 10, host: 'box-9' })).map((j) => j.id),
          [claimed.id],
        );
        assert.deepEqual(
          (await store.observe.jobsPage({ limit: 10, key: 'k3' })).map((j) => j.key),
          ['k3'],
        );
      }));

    test('lists live claims with their holder session, host, pid and active job', () =>
      withFixture(h, async ({ store }) => {
        await givenTask(store, 'free');
        const s = await store.sessions.start({ kind: 'agent', host: 'box-2', pid: 777, name: 'ann' });
        const { job } = await store.jobs.enqueue({ key: 'held', ramMb: 256 });
        const granted = await store.claims.acquire({ key: 'held', session: s.id });
        assert.ok(granted.ok);
        const [claim, ...rest] = await store.observe.liveClaims();
        assert.equal(rest.length, 0);
        assert.ok(claim !== undefined);
        assert.equal(claim.key, 'held');
        assert.equal(claim.session, s.id);
        assert.equal(claim.kind, 'agent');
        assert.equal(claim.host, 'box-2');
        assert.equal(claim.pid, 777);
        assert.equal(claim.name, 'ann');
        assert.equal(claim.epoch, granted.claim.epoch);
        assert.equal(claim.claimedAt, granted.claim.claimedAt);
        assert.deepEqual(claim.job, await store.jobs.get(job.id));
        await store.claims.release({ key: 'held', session: s.id, epoch: claim.epoch, outcome: 'released' });
        assert.deepEqual(await store.observe.liveClaims(), []);
      }));

    test('reads the ledger newest first by keyset, filtered by host', () =>
      withFixture(h, async ({ store }) => {
        await givenHost(store, 'box-1');
        await givenHost(store, 'box-2');
        await store.jobs.enqueue({ key: 'a' });
        const all = await store.audit.list({ limit: 1000 });
        const newest = await store.audit.list({ newestFirst: true, limit: 2 });
        assert.deepEqual(newest, all.slice(-2).reverse());
        const before = newest.at(-1)?.id;
        assert.deepEqual(
          await store.audit.list({ newestFirst: true, beforeId: before, limit: 1000 }),
          all.filter((e) => before !== undefined && e.id < before).reverse(),
        );
        const onBox2 = await store.audit.list({ host: 'box-2', limit: 1000 });
        assert.ok(onBox2.length > 0);
        assert.deepEqual(
          onBox2,
          all.filter((e) => e.host === 'box-2'),
        );
      }));

    test('counts jobs, waiting reasons, claims and ledger rows as work happens', () =>
      withFixture(h, async ({ store }) => {
        const empty = await store.observe.stats();
        assert.equal(empty.claimsGranted, 0);
        assert.equal(empty.oldestClaimHeartbeatAt, null);
        await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'a' });
        await store.jobs.enqueue({ key: 'b' });
        assert.ok(await store.dispatch.markWaiting({ id: job.id, reason: 'needs 4096 MB', term }));
        const s = await givenSession(store);
        await givenTask(store, 'c');
        const c = await store.claims.acquire({ key: 'c', session: s.id });
        assert.ok(c.ok);
        const stats = await store.observe.stats();
        const by = (list: readonly { name: string; count: number }[]) =>
          Object.fromEntries(list.map((x) => [x.name, x.count]));
        assert.deepEqual(by(stats.jobsByStatus), { queued: 2 });
        assert.deepEqual(by(stats.waitingByReason), { 'needs 4096 MB': 1 });
        assert.equal(stats.jobsStarted, 0);
        assert.equal(stats.claimsGranted, 1);
        assert.equal(stats.claimsHeld, 1);
        assert.equal(stats.oldestClaimHeartbeatAt, c.claim.heartbeatAt);
        assert.ok(stats.now >= c.claim.heartbeatAt);
        assert.equal(stats.auditMaxId, await store.observe.auditMaxId());
        assert.equal(stats.auditMaxId, (await store.audit.list({ limit: 1000 })).at(-1)?.id);
        await store.sessions.end(s.id);
        const after = await store.observe.stats();
        assert.equal(after.claimsHeld, 0);
        assert.deepEqual(by(after.claimsByOutcome), { abandoned: 1 });
        const w = await givenSession(store);
        const started = await store.jobs.claimNext({ session: w.id, start: true });
        assert.ok(started !== null);
        assert.equal((await store.observe.stats()).jobsStarted, 1);
        assert.ok(after.auditMaxId > stats.auditMaxId);
      }));
  });
}
