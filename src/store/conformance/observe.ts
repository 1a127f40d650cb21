import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job, JobState } from '../../core/job.js';
import { GENESIS_HASH } from '../../core/ledger.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, givenTask, sleep, withFixture, type Harness } from './harness.js';

export function exerciseObserve(harness: Harness): void {
  describe("the operator's reads", () => {
    test('pages jobs newest first by keyset, with filters, and no page repeats or skips a job', () =>
      withFixture(harness, async ({ store }) => {
        const ids: number[] = [];
        for (let index = 0; index < 7; index++)
          ids.push((await store.jobs.enqueue({ key: `k${index}` })).job.id);
        const session = await givenSession(store);
        const claimed = await store.jobs.claimNext({ session: session.id, host: 'box-9' });
        assert.ok(claimed !== null);
        const seen: number[] = [];
        let before: number | undefined;
        for (;;) {
          const page = await store.observe.jobsPage({ limit: 3, beforeId: before });
          if (page.length === 0) break;
          seen.push(...page.map((job) => job.id));
          before = page.at(-1)?.id;
        }
        assert.deepEqual(seen, [...ids].reverse());
        const claimedOnly = await store.observe.jobsPage({ limit: 10, status: ['claimed'] });
        assert.deepEqual(
          claimedOnly.map((job) => [job.id, job.host]),
          [[claimed.id, 'box-9']],
        );
        assert.deepEqual(
          (await store.observe.jobsPage({ limit: 10, host: 'box-9' })).map((job) => job.id),
          [claimed.id],
        );
        assert.deepEqual(
          (await store.observe.jobsPage({ limit: 10, key: 'k3' })).map((job) => job.key),
          ['k3'],
        );
      }));

    test('pages live states newest first by keyset, finished jobs between them skipped', () =>
      withFixture(harness, async ({ store }) => {
        const ids: number[] = [];
        for (let index = 0; index < 9; index++)
          ids.push((await store.jobs.enqueue({ key: `live${index}` })).job.id);
        const session = await givenSession(store);
        // The three oldest are taken: one finishes, one runs, one stays claimed.
        const taken: Job[] = [];
        for (let index = 0; index < 3; index++) {
          const job = await store.jobs.claimNext({ session: session.id, host: `box-${index}` });
          assert.ok(job !== null);
          taken.push(job);
        }
        const [done, running, claimed] = taken as [Job, Job, Job];
        await store.jobs.start({ id: running.id, session: session.id, epoch: running.epoch });
        await store.jobs.start({ id: done.id, session: session.id, epoch: done.epoch });
        await store.jobs.finish({ id: done.id, session: session.id, epoch: done.epoch, status: 'done' });
        const queued = ids.filter((id) => !taken.some((job) => job.id === id)).reverse();
        const walk = async (status: readonly JobState[], host?: string): Promise<number[]> => {
          const seen: number[] = [];
          let before: number | undefined;
          for (;;) {
            const page = await store.observe.jobsPage({ limit: 2, beforeId: before, status, host });
            if (page.length === 0) return seen;
            seen.push(...page.map((job) => job.id));
            before = page.at(-1)?.id;
          }
        };
        assert.deepEqual(await walk(['queued']), queued);
        assert.deepEqual(await walk(['claimed', 'running']), [claimed.id, running.id]);
        assert.deepEqual(await walk(['running']), [running.id]);
        assert.deepEqual(await walk(['claimed', 'running'], 'box-1'), [running.id]);
        assert.deepEqual(await walk(['queued', 'claimed', 'running']), [...queued, claimed.id, running.id]);
        assert.deepEqual(await walk(['queued', 'done']), [...queued, done.id]);
      }));

    test('lists live claims with their holder session, host, pid and active job', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'free');
        const session = await store.sessions.start({ kind: 'agent', host: 'box-2', pid: 777, name: 'ann' });
        const { job } = await store.jobs.enqueue({ key: 'held', ramMb: 256 });
        const granted = await store.claims.acquire({ key: 'held', session: session.id });
        assert.ok(granted.ok);
        const [claim, ...rest] = await store.observe.liveClaims();
        assert.equal(rest.length, 0);
        assert.ok(claim !== undefined);
        assert.equal(claim.key, 'held');
        assert.equal(claim.session, session.id);
        assert.equal(claim.kind, 'agent');
        assert.equal(claim.host, 'box-2');
        assert.equal(claim.pid, 777);
        assert.equal(claim.name, 'ann');
        assert.equal(claim.epoch, granted.claim.epoch);
        assert.equal(claim.claimedAt, granted.claim.claimedAt);
        assert.deepEqual(claim.job, await store.jobs.get(job.id));
        await store.claims.release({
          key: 'held',
          session: session.id,
          epoch: claim.epoch,
          outcome: 'released',
        });
        assert.deepEqual(await store.observe.liveClaims(), []);
      }));

    test('reads the ledger newest first by keyset, filtered by host', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1');
        await givenHost(store, 'box-2');
        await store.jobs.enqueue({ key: 'a' });
        const all = await store.audit.list({ limit: 1000 });
        const newest = await store.audit.list({ newestFirst: true, limit: 2 });
        assert.deepEqual(newest, all.slice(-2).reverse());
        const before = newest.at(-1)?.id;
        assert.deepEqual(
          await store.audit.list({ newestFirst: true, beforeId: before, limit: 1000 }),
          all.filter((entry) => before !== undefined && entry.id < before).reverse(),
        );
        const onBox2 = await store.audit.list({ host: 'box-2', limit: 1000 });
        assert.ok(onBox2.length > 0);
        assert.deepEqual(
          onBox2,
          all.filter((entry) => entry.host === 'box-2'),
        );
      }));

    test('counts jobs, waiting reasons, claims and ledger rows as work happens', () =>
      withFixture(harness, async ({ store }) => {
        const empty = await store.observe.stats();
        assert.equal(empty.claimsGranted, 0);
        assert.equal(empty.oldestClaimHeartbeatAt, null);
        await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'a' });
        await store.jobs.enqueue({ key: 'b' });
        assert.ok(await store.dispatch.markWaiting({ id: job.id, reason: 'needs 4096 MB', term }));
        const session = await givenSession(store);
        await givenTask(store, 'c');
        const result = await store.claims.acquire({ key: 'c', session: session.id });
        assert.ok(result.ok);
        const stats = await store.observe.stats();
        const by = (list: readonly { name: string; count: number }[]) =>
          Object.fromEntries(list.map((group) => [group.name, group.count]));
        assert.deepEqual(by(stats.jobsByStatus), { queued: 2 });
        assert.deepEqual(by(stats.waitingByReason), { 'needs 4096 MB': 1 });
        assert.equal(stats.jobsStarted, 0);
        assert.equal(stats.claimsGranted, 1);
        assert.equal(stats.claimsHeld, 1);
        assert.equal(stats.oldestClaimHeartbeatAt, result.claim.heartbeatAt);
        assert.ok(stats.now >= result.claim.heartbeatAt);
        assert.equal(stats.auditMaxId, await store.observe.auditMaxId());
        assert.equal(stats.auditMaxId, (await store.audit.list({ limit: 1000 })).at(-1)?.id);
        await store.sessions.end(session.id);
        const after = await store.observe.stats();
        assert.equal(after.claimsHeld, 0);
        assert.deepEqual(by(after.claimsByOutcome), { abandoned: 1 });
        const worker = await givenSession(store);
        const started = await store.jobs.claimNext({ session: worker.id, start: true });
        assert.ok(started !== null);
        assert.equal((await store.observe.stats()).jobsStarted, 1);
        assert.ok(after.auditMaxId > stats.auditMaxId);
      }));

    test('reports hosts with their live runner session, tasks by state, and the unsealed ledger', () =>
      withFixture(harness, async ({ store }) => {
        const empty = await store.observe.stats();
        assert.deepEqual(empty.hosts, []);
        assert.deepEqual(empty.ledger, { keys: 0, unsealedRows: 0, oldestUnsealedAt: null });
        assert.deepEqual(
          await store.observe.ledgerWindow(),
          empty.ledger,
          'the window alone, as stats reads it',
        );
        assert.deepEqual(empty.tasksByState, []);
        const { session: serving, host } = await givenHost(store, 'box-1');
        const { session: gone } = await givenHost(store, 'box-2', { enabled: false });
        await store.sessions.end(gone.id);
        const { session: drainer } = await givenHost(store, 'box-3');
        assert.equal(await store.hosts.drain({ name: 'box-3', session: drainer.id }), true);
        for (const key of ['a', 'b', 'c']) await givenTask(store, key);
        const by = { name: 'ops' };
        const escalated = await store.lifecycle.escalate({ key: 'a', reason: 'stuck', by });
        assert.ok(escalated.ok);
        await store.lifecycle.gate({ key: 'b', gate: 'design', by });
        const fleeting = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 7, ttlMs: 50 });
        assert.ok((await store.claims.acquire({ key: 'c', session: fleeting.id })).ok);
        // A claim within its holder's TTL (5 min without one) is not counted; the fleeting one is.
        await givenTask(store, 'd');
        assert.ok((await store.claims.acquire({ key: 'd', session: serving.id })).ok);
        await sleep(120);
        const rows = await store.audit.list({ limit: 1000 });
        const stats = await store.observe.stats();
        assert.equal(stats.claimsPastTtl, 1);
        assert.deepEqual(
          stats.hosts.map((one) => [one.name, one.enabled, one.draining, one.liveSession?.id ?? null]),
          [
            ['box-1', true, false, serving.id],
            ['box-2', false, false, null],
            ['box-3', false, true, drainer.id],
          ],
        );
        assert.equal(stats.hosts[0]?.heartbeatAt, host.heartbeatAt);
        assert.equal(stats.hosts[0]?.liveSession?.ttlMs, serving.ttlMs);
        const tasks = await Promise.all(['b', 'c', 'd'].map((key) => store.tasks.get(key)));
        const openSince = Math.min(...tasks.map((task) => task?.stateAt ?? 0));
        assert.deepEqual(
          [...stats.tasksByState].sort((one, other) => one.name.localeCompare(other.name)),
          [
            { name: 'escalated', count: 1, gated: 0, oldestAt: escalated.task.stateAt },
            { name: 'open', count: 3, gated: 1, oldestAt: openSince },
          ],
        );
        assert.deepEqual(stats.ledger, { keys: 0, unsealedRows: rows.length, oldestUnsealedAt: rows[0]?.at });
        assert.deepEqual(await store.observe.ledgerWindow(), stats.ledger);
        await store.ledger.addKey({ id: 'k'.repeat(16), publicKey: 'cHVibGlj' });
        const through = rows[2]?.id ?? 0;
        const sealed = await store.ledger.append(
          {
            kind: 'seal',
            seq: 1,
            firstId: rows[0]?.id ?? 1,
            lastId: through,
            rowCount: 3,
            root: 'r'.repeat(64),
            prevHash: GENESIS_HASH,
            hash: 'h'.repeat(64),
            keyId: 'k'.repeat(16),
            signature: 'sig',
            sealedAt: 1_700_000_000_000,
            throughSeq: null,
          },
          new Uint8Array([1]),
        );
        assert.ok(sealed);
        const after = (await store.observe.stats()).ledger;
        assert.deepEqual(after, {
          keys: 1,
          unsealedRows: rows.length - 3 + 1, // and the key's own ledger:key-added row
          oldestUnsealedAt: rows[3]?.at,
        });
        assert.deepEqual(await store.observe.ledgerWindow(), after);
      }));
  });
}
